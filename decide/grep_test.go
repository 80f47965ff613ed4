package decide

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/wardenhq/warden/backend"
	"github.com/wardenhq/warden/backend/local"
	"github.com/wardenhq/warden/permission"
	"github.com/wardenhq/warden/tools"
)

// TestApprovedGrepReadsSensitiveFile: a Grep that names a sensitive file
// asks; once a human approved it, the call's profile (the one Prepare
// records) lets the sandboxed search read that file, with each engine.
func TestApprovedGrepReadsSensitiveFile(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, ".env"), []byte("API_KEY=TOKEN_MARKER secret\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	env := &tools.Env{Backend: local.New(dir), Workdir: dir}
	engines := []tools.Grep{{Engine: tools.GrepGo}}
	if _, err := exec.LookPath("rg"); err == nil {
		engines = append(engines, tools.Grep{Engine: tools.GrepRipgrep})
	} else if os.Getenv("WARDEN_REQUIRE_RG") != "" {
		t.Fatalf("WARDEN_REQUIRE_RG is set but rg is not on PATH: %v", err)
	}
	for _, g := range engines {
		named := `{"pattern":"TOKEN_MARKER","output_mode":"content","path":"` + filepath.Join(dir, ".env") + `"}`
		prof := Profile(context.Background(), Call{Tool: g, Input: json.RawMessage(named), Workdir: dir, Policy: &permission.Context{}},
			permission.Verdict{Decision: permission.Decision{Behavior: permission.Ask}, ReadOnly: true})
		if !slices.Contains(prof.Read, filepath.Join(dir, ".env")) {
			t.Errorf("%s: the approved search's profile does not grant the read of .env: %+v", g.Engine, prof)
		}
		r, err := tools.Collect(g.Call(backend.WithSandbox(context.Background(), &prof), env, json.RawMessage(named)))
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(r.Content, "secret") {
			t.Errorf("%s: searching .env by name found nothing:\n%s", g.Engine, r.Content)
		}
	}
}
