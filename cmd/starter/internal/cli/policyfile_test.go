package cli

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/wardenhq/warden/decide"
	"github.com/wardenhq/warden/permission"
)

// TestLoadPolicy: a policy file loads, and one whose examples fail is
// refused with the failing example named.
func TestLoadPolicy(t *testing.T) {
	t.Parallel()
	f := filepath.Join(t.TempDir(), "p.yaml")
	if err := os.WriteFile(f, []byte("mode: default\nallow:\n  - {rule: \"Bash(npm run:*)\", match: [\"npm run build\"]}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	p, err := LoadPolicy(context.Background(), f)
	if err != nil || p.Mode != "default" || !slices.Equal(p.Allow, []string{"Bash(npm run:*)"}) {
		t.Fatalf("policy = %+v %v", p, err)
	}
	if err := os.WriteFile(f, []byte("allow:\n  - {rule: \"Bash(npm run:*)\", match: [\"npm install\"]}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	var ee *decide.ExampleError
	if _, err := LoadPolicy(context.Background(), f); !errors.As(err, &ee) || !strings.Contains(err.Error(), "policy "+f) {
		t.Fatalf("failing example: %v", err)
	}
	if _, err := LoadPolicy(context.Background(), filepath.Join(t.TempDir(), "missing.yaml")); err == nil {
		t.Fatal("a missing file loaded")
	}
}

// TestReadLiveRules: the rules come from a config file's permission
// section in their long form too; bad rules, failing examples and a file
// without rules are refused.
func TestReadLiveRules(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	f := filepath.Join(t.TempDir(), "p.yaml")
	if err := os.WriteFile(f, []byte("permission:\n  allow:\n    - Bash(npm test:*)\n    - {rule: \"Bash(npm run:*)\", match: [\"npm run build\"]}\n  deny: [\"Bash(curl:*)\"]\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	r, err := ReadLiveRules(ctx, f)
	if err != nil || !slices.Equal(r.Allow, []string{"Bash(npm test:*)", "Bash(npm run:*)"}) || !slices.Equal(r.Deny, []string{"Bash(curl:*)"}) {
		t.Fatalf("rules = %+v %v", r, err)
	}
	for src, want := range map[string]string{
		"allow: [\"Bash(\"]\n": f + ": ",
		"allow:\n  - {rule: \"Bash(npm run:*)\", match: [\"npm install\"]}\n": "npm install",
		"mode: bypass\n": "no allow, ask or deny rules",
	} {
		if err := os.WriteFile(f, []byte(src), 0o644); err != nil {
			t.Fatal(err)
		}
		if _, err := ReadLiveRules(ctx, f); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%q: %v, want an error with %q", src, err, want)
		}
	}
}

// TestPolicyContext: a policy file replaces the base policy, a mode
// replaces the mode, and a bad mode or file is an error.
func TestPolicyContext(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	base := permission.Policy{Mode: permission.ModeDefault, Allow: []string{"Read"}}
	pc, err := PolicyContext(ctx, base, "", "")
	if err != nil || pc.Mode != permission.ModeDefault || len(pc.Allow) != 1 {
		t.Fatalf("base: %+v %v", pc, err)
	}
	f := filepath.Join(t.TempDir(), "p.yaml")
	if err := os.WriteFile(f, []byte("mode: explore\ndeny: [\"Bash(curl:*)\"]\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	pc, err = PolicyContext(ctx, base, f, permission.ModeBypass)
	if err != nil || pc.Mode != permission.ModeBypass || len(pc.Allow) != 0 || len(pc.Deny) != 1 {
		t.Fatalf("file and mode: %+v %v", pc, err)
	}
	if _, err := PolicyContext(ctx, base, "", "yolo"); err == nil {
		t.Error("mode yolo accepted")
	}
	if _, err := PolicyContext(ctx, base, filepath.Join(t.TempDir(), "missing.yaml"), ""); err == nil {
		t.Error("a missing file accepted")
	}
}
