package tools

import (
	"encoding/json"
	"errors"
	"sync"
	"testing"
)

func TestValidate(t *testing.T) {
	t.Parallel()
	cases := []struct {
		tool  Tool
		input string
		want  string // "" means valid
	}{
		{Read{}, `{"file_path":"/x","offset":3}`, ""},
		{Read{}, `{"file_path":"/x","offset":"3"}`, "Input validation failed for tool 'Read': at '/offset': got string, want integer"},
		{Read{}, `{}`, "Input validation failed for tool 'Read': at '': missing property 'file_path'"},
		{Read{}, `{"file_path":"/x","bogus":1}`, "Input validation failed for tool 'Read': at '': additional properties 'bogus' not allowed"},
		{Read{}, `[1]`, "Input validation failed for tool 'Read': at '': got array, want object"},
		{Read{}, `{`, "Input validation failed for tool 'Read': input is not valid JSON: unexpected EOF"},
		{Grep{}, `{"pattern":"x","output_mode":"lines"}`, "Input validation failed for tool 'Grep': at '/output_mode': value must be one of 'content', 'files_with_matches', 'count'"},
		// A relative path fails before anyone is asked to approve the call.
		{Write{}, `{"file_path":"rel.txt","content":"x"}`, "Input validation failed for tool 'Write': at '/file_path': 'rel.txt' does not match pattern '^/'"},
		{Edit{}, `{"file_path":"a/b.go","old_string":"x","new_string":"y"}`, "Input validation failed for tool 'Edit': at '/file_path': 'a/b.go' does not match pattern '^/'"},
		{TaskList{}, `{}`, ""},
		{AskUser{}, `{"questions":[{"question":"q?","header":"h","options":[{"label":"a","description":"d"},{"label":"b","description":"d"}]}]}`, ""},
		{AskUser{}, `{"questions":[{"question":"q?","header":"much too long header","options":[{"label":"a","description":"d"},{"label":"b","description":"d"}]}]}`, "Input validation failed for tool 'AskUser': at '/questions/0/header': maxLength: got 20, want 12"},
	}
	var v Validator
	for _, c := range cases {
		for _, validate := range []func(Info, json.RawMessage) error{Validate, v.Validate} {
			err := validate(c.tool.Info(), json.RawMessage(c.input))
			got := ""
			if err != nil {
				got = err.Error()
				var ve *ValidationError
				if !errors.As(err, &ve) {
					t.Errorf("%s: error %T is not a *ValidationError", c.input, err)
				}
			}
			if got != c.want {
				t.Errorf("%s %s:\n got %q\nwant %q", c.tool.Info().Name, c.input, got, c.want)
			}
		}
	}
	// Every built-in schema compiles, concurrently through one Validator.
	var wg sync.WaitGroup
	for _, tl := range Builtins() {
		wg.Go(func() {
			err := v.Validate(tl.Info(), json.RawMessage(`{}`))
			var ve *ValidationError
			if err != nil && !errors.As(err, &ve) {
				t.Errorf("%s: schema does not compile: %v", tl.Info().Name, err)
			}
		})
	}
	wg.Wait()
}
