package config_test

import (
	"fmt"

	"github.com/wardenhq/warden/config"
)

// ExampleParse reads YAML over the defaults: keys left out keep their
// default values, the permission section parses into an engine policy,
// and unknown keys or bad values are errors that name the key.
func ExampleParse() {
	c, err := config.Parse([]byte(`
worker:
  task_queue: agents
permission:
  mode: accept_edits
  allow: ["Bash(npm run:*)"]
  deny: ["Bash(rm:*)"]
`))
	if err != nil {
		panic(err)
	}
	fmt.Println(c.Worker.TaskQueue, c.Server.Port, c.Backend.Default)
	pc, err := c.Permission.Context()
	if err != nil {
		panic(err)
	}
	fmt.Println(pc.Mode, pc.Allow[0], pc.Deny[0])

	_, err = config.Parse([]byte("server:\n  port: 70000\n"))
	fmt.Println(err)
	// Output:
	// agents 7233 local
	// accept_edits Bash(npm run:*) Bash(rm:*)
	// server.port: 70000 is not a valid port
}
