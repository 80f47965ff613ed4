package decide

import (
	"context"
	"encoding/json"
	"slices"
	"testing"

	"github.com/wardenhq/warden/permission"
	"github.com/wardenhq/warden/tools"
)

// TestProfileMarksMkdirTargets: an asked `mkdir` outside the working
// directories is granted as the directory it makes (a trailing slash in
// the profile, which the local backend creates as a directory), a
// redirection as the file it writes.
func TestProfileMarksMkdirTargets(t *testing.T) {
	ctx := context.Background()
	def := &permission.Context{Mode: permission.ModeDefault}
	for cmd, want := range map[string][]string{
		"mkdir -p /etc/newapp":           {"/src/app", "/etc/newapp/"},
		"LC_ALL=C mkdir /opt/x":          {"/src/app", "/opt/x/"},
		"echo x > /etc/newapp/a.conf":    {"/src/app", "/etc/newapp/a.conf"},
		"mkdir d && echo x > /etc/a.txt": {"/src/app", "/etc/a.txt"},
		"install -d /opt/y":              {"/src/app", "/opt/y/"},
	} {
		in, _ := json.Marshal(tools.BashInput{Command: cmd})
		c := Call{Tool: tools.Bash{}, Input: in, Workdir: "/src/app", Home: "/home/dev", Policy: def}
		v, err := Verdict(ctx, c)
		if err != nil {
			t.Fatal(err)
		}
		if got := Profile(ctx, c, v).Write; !slices.Equal(got, want) {
			t.Errorf("%s: write %q, want %q", cmd, got, want)
		}
	}
}
