package tools_test

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/wardenhq/warden/tools"
)

// WeatherInput is the input of the example's function tool. Its JSON
// schema is derived from the fields and tags.
type WeatherInput struct {
	City string `json:"city" jsonschema:"description=City name"`
	Days int    `json:"days,omitempty" jsonschema:"minimum=1,maximum=7"`
}

// ExampleFunc wraps a typed Go function as a tool: the schema comes from
// the input struct, the result becomes a text chunk, and an error from
// the function becomes an error result the model reads.
func ExampleFunc() {
	weather, err := tools.Func("Weather", "Forecast for a city.",
		func(_ context.Context, in WeatherInput) (string, error) {
			if in.City == "" {
				return "", fmt.Errorf("city is required")
			}
			return fmt.Sprintf("%s: sunny for %d day(s)", in.City, max(in.Days, 1)), nil
		},
		tools.WithReadOnly(true), tools.WithAllow())
	if err != nil {
		panic(err)
	}
	info := weather.Info()
	var schema struct {
		Required []string `json:"required"`
	}
	if err := json.Unmarshal(info.InputSchema, &schema); err != nil {
		panic(err)
	}
	fmt.Println(info.Name, "read-only:", info.ReadOnly, "required:", schema.Required)

	ctx := context.Background()
	res, _ := tools.Collect(weather.Call(ctx, &tools.Env{}, json.RawMessage(`{"city":"Lisbon","days":3}`)))
	fmt.Println(res.Content, res.State)
	res, _ = tools.Collect(weather.Call(ctx, &tools.Env{}, json.RawMessage(`{}`)))
	fmt.Println(res.Content, res.State)
	// Output:
	// Weather read-only: true required: [city]
	// Lisbon: sunny for 3 day(s) success
	// Error: city is required error
}

// ExampleRegistry collects tools by name; duplicates are refused.
func ExampleRegistry() {
	reg, err := tools.NewRegistry(tools.Bash{}, tools.Read{})
	if err != nil {
		panic(err)
	}
	fmt.Println(reg.Names())
	if err := reg.Add(tools.Bash{}); err != nil {
		fmt.Println(err)
	}
	if t, ok := reg.Get("Read"); ok {
		fmt.Println(t.Info().Name, t.Info().ReadOnly)
	}
	// Output:
	// [Bash Read]
	// tools: duplicate tool "Bash"
	// Read true
}
