package warden_test

import (
	"os/exec"
	"slices"
	"strings"
	"testing"
)

const module = "github.com/wardenhq/warden"

// TestLayering: packages import only what the layout (docs/layout.md)
// allows, read from `go list`: imports point down, from the mains to the
// value packages.
func TestLayering(t *testing.T) {
	// For a package, the only packages of ours it may import (a trailing
	// "/..." takes a subtree).
	layering := map[string][]string{
		"config":             {"permission"},
		"permission":         {},
		"permission/shell":   {"permission"},
		"calls":              {},
		"model":              {},
		"auth":               {},
		"notify":             {},
		"workflows":          {"calls", "model", "permission"},
		"backend":            {"calls"},
		"internal/devserver": {"auth"},
		"cmd/worker":         {"config", "node"},
	}
	// Packages only those listed may import (a command's own packages,
	// cmd/X/internal/..., are imported by that command).
	only := []struct {
		pkg    string
		except []string
	}{
		{"node", []string{"cmd/worker", "tests"}},
		{"internal/devserver", []string{"node", "tests"}},
		{"cmd/...", nil},
	}
	out, err := exec.Command("go", "list", "-f", `{{.ImportPath}}{{range .Imports}} {{.}}{{end}}`, "./...").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	imports := map[string][]string{}
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		f := strings.Fields(line)
		pkg := ours(f[0])
		for _, imp := range f[1:] {
			if strings.HasPrefix(imp, module) {
				imports[pkg] = append(imports[pkg], ours(imp))
			}
		}
		if _, ok := imports[pkg]; !ok {
			imports[pkg] = nil
		}
	}
	for pkg, allowed := range layering {
		got, ok := imports[pkg]
		if !ok {
			t.Errorf("%s: no such package", pkg)
		}
		for _, imp := range got {
			if !matchAny(imp, allowed) {
				t.Errorf("%s imports %s; it may import only %v", pkg, imp, allowed)
			}
		}
	}
	for pkg, got := range imports {
		for _, imp := range got {
			for _, n := range only {
				if match(imp, n.pkg) && !matchAny(pkg, n.except) && !sameCommand(pkg, imp) {
					t.Errorf("%s imports %s, which only %v may import", pkg, imp, n.except)
				}
			}
			if match(pkg, "permission/...") && match(imp, "tools/...") {
				t.Errorf("%s imports %s: permission sits below tools", pkg, imp)
			}
		}
	}
}

// sameCommand reports whether a and b are packages of one command:
// cmd/X and cmd/X/internal/... .
func sameCommand(a, b string) bool {
	ca, ok := strings.CutPrefix(a, "cmd/")
	if !ok {
		return false
	}
	cb, ok := strings.CutPrefix(b, "cmd/")
	if !ok {
		return false
	}
	name := func(p string) string { n, _, _ := strings.Cut(p, "/"); return n }
	return name(ca) == name(cb)
}

func ours(p string) string {
	if p == module {
		return "."
	}
	return strings.TrimPrefix(p, module+"/")
}

// match reports whether pkg is pattern, or under it for "dir/...".
func match(pkg, pattern string) bool {
	if dir, ok := strings.CutSuffix(pattern, "/..."); ok {
		return pkg == dir || strings.HasPrefix(pkg, dir+"/")
	}
	return pkg == pattern
}

func matchAny(pkg string, patterns []string) bool {
	return slices.ContainsFunc(patterns, func(p string) bool { return match(pkg, p) })
}

// TestNoAWSInLibrary: package warden and package client link the S3
// content store (and with it the AWS SDK) only when a program asks for
// it (content/stores, content/s3store); a worker or client on the
// directory store does not carry it. The control: content/stores does.
func TestNoAWSInLibrary(t *testing.T) {
	deps := func(pkg string) []string {
		out, err := exec.Command("go", "list", "-deps", pkg).Output()
		if err != nil {
			t.Fatalf("go list -deps %s: %v", pkg, err)
		}
		return strings.Fields(string(out))
	}
	aws := func(p string) bool { return strings.HasPrefix(p, "github.com/aws/") }
	for _, pkg := range []string{module, module + "/client"} {
		if i := slices.IndexFunc(deps(pkg), aws); i >= 0 {
			t.Errorf("%s depends on %s", pkg, deps(pkg)[i])
		}
	}
	if !slices.ContainsFunc(deps(module+"/content/stores"), aws) {
		t.Error("content/stores does not depend on the AWS SDK: the check above sees nothing")
	}
}
