package decide_test

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/wardenhq/warden/decide"
	"github.com/wardenhq/warden/permission"
	"github.com/wardenhq/warden/tools"
)

// ExampleBind evaluates Bash calls against a policy with the
// permission engine: rules match per simple command, read-only commands
// are allowed, and the rest asks in the default mode.
func ExampleBind() {
	pc, err := permission.Policy{
		Allow: []string{"Bash(npm run:*)"},
		Deny:  []string{"Bash(rm:*)"},
	}.Context()
	if err != nil {
		panic(err)
	}
	bash := decide.Bind(tools.Bash{}, &tools.Env{Workdir: "/work"})
	for _, cmd := range []string{"npm run test", "rm -rf build", "ls -la", "curl https://example.com"} {
		input, _ := json.Marshal(tools.BashInput{Command: cmd})
		d, err := permission.Evaluate(context.Background(), &pc, bash, input)
		if err != nil {
			panic(err)
		}
		fmt.Printf("%-25s %s\n", cmd, d.Behavior)
	}
	// Output:
	// npm run test              allow
	// rm -rf build              deny
	// ls -la                    allow
	// curl https://example.com  ask
}
