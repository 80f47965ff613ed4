package workflows_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	historypb "go.temporal.io/api/history/v1"
	"go.temporal.io/sdk/converter"
	"google.golang.org/protobuf/encoding/protojson"
)

// recordedHistories is where the integration tests keep the histories
// TestReplayHistories replays.
const recordedHistories = "../tests/testdata"

// getVersionCall is one workflow.GetVersion call of the workflow code.
type getVersionCall struct {
	pos     string
	id      string
	max     int
	constID string
}

// versionConsts are the string constants named version* of versions.go,
// by name.
func versionConsts(t *testing.T) map[string]string {
	t.Helper()
	f, err := parser.ParseFile(token.NewFileSet(), "versions.go", nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for _, d := range f.Decls {
		g, ok := d.(*ast.GenDecl)
		if !ok || g.Tok != token.CONST {
			continue
		}
		for _, s := range g.Specs {
			vs := s.(*ast.ValueSpec)
			for i, n := range vs.Names {
				if !strings.HasPrefix(n.Name, "version") {
					continue
				}
				lit, ok := vs.Values[i].(*ast.BasicLit)
				if !ok || lit.Kind != token.STRING {
					t.Fatalf("versions.go: %s is not a string literal", n.Name)
				}
				out[n.Name], _ = strconv.Unquote(lit.Value)
			}
		}
	}
	return out
}

// getVersionCalls finds every workflow.GetVersion call in the package's
// non-test files. Its change ID must be one of the constants of
// versions.go and its maximum version an integer literal.
func getVersionCalls(t *testing.T) []getVersionCall {
	t.Helper()
	ids := versionConsts(t)
	fset := token.NewFileSet()
	names, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	var out []getVersionCall
	for _, name := range names {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, name, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		ast.Inspect(f, func(n ast.Node) bool {
			c, ok := n.(*ast.CallExpr)
			if !ok {
				return true
			}
			sel, ok := c.Fun.(*ast.SelectorExpr)
			if !ok || sel.Sel.Name != "GetVersion" {
				return true
			}
			if x, ok := sel.X.(*ast.Ident); !ok || x.Name != "workflow" {
				return true
			}
			pos := fset.Position(c.Pos()).String()
			if len(c.Args) != 4 {
				t.Fatalf("%s: GetVersion with %d arguments", pos, len(c.Args))
			}
			id, ok := c.Args[1].(*ast.Ident)
			if !ok || ids[id.Name] == "" {
				t.Errorf("%s: the change ID is not a constant of versions.go: declare it there", pos)
				return true
			}
			lit, ok := c.Args[3].(*ast.BasicLit)
			if !ok || lit.Kind != token.INT {
				t.Errorf("%s: the maximum version is not an integer literal", pos)
				return true
			}
			maxV, _ := strconv.Atoi(lit.Value)
			out = append(out, getVersionCall{pos: pos, id: ids[id.Name], max: maxV, constID: id.Name})
			return true
		})
	}
	slices.SortFunc(out, func(a, b getVersionCall) int { return strings.Compare(a.pos, b.pos) })
	return out
}

// recordedVersions reads the Version markers of every recorded history:
// for each change ID, the versions recorded and the files recording them.
func recordedVersions(t *testing.T) map[string]map[int][]string {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(recordedHistories, "*.json"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no recorded histories in %s: %v", recordedHistories, err)
	}
	dc := converter.GetDefaultDataConverter()
	out := map[string]map[int][]string{}
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		var h historypb.History
		if err := (protojson.UnmarshalOptions{DiscardUnknown: true}).Unmarshal(data, &h); err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		for _, e := range h.GetEvents() {
			m := e.GetMarkerRecordedEventAttributes()
			if m.GetMarkerName() != "Version" {
				continue
			}
			var id string
			var v int
			if err := dc.FromPayloads(m.GetDetails()["change-id"], &id); err != nil {
				t.Fatalf("%s event %d: change id: %v", f, e.GetEventId(), err)
			}
			if err := dc.FromPayloads(m.GetDetails()["version"], &v); err != nil {
				t.Fatalf("%s event %d: version: %v", f, e.GetEventId(), err)
			}
			if out[id] == nil {
				out[id] = map[int][]string{}
			}
			if name := filepath.Base(f); !slices.Contains(out[id][v], name) {
				out[id][v] = append(out[id][v], name)
			}
		}
	}
	return out
}

// TestVersionsRecorded is the replay corpus check: every change ID and
// version the workflow code asks for with workflow.GetVersion is recorded
// in at least one history of tests/testdata, which TestReplayHistories
// replays (the default branch of each is what the older histories
// replay). It fails for a new change ID until a history of its new
// branch is recorded (see versions.go).
func TestVersionsRecorded(t *testing.T) {
	calls := getVersionCalls(t)
	if len(calls) == 0 {
		t.Fatal("found no workflow.GetVersion call: the check reads nothing")
	}
	recorded := recordedVersions(t)
	seen := map[string]bool{}
	for _, c := range calls {
		key := c.id + "@" + strconv.Itoa(c.max)
		if seen[key] {
			continue
		}
		seen[key] = true
		if files := recorded[c.id][c.max]; len(files) > 0 {
			t.Logf("%s (%s) version %d: recorded in %s", c.id, c.constID, c.max, strings.Join(files, ", "))
			continue
		}
		t.Errorf("%s: change ID %q (%s) version %d appears in no recorded history of %s: record one that takes its branch "+
			"(bump recordGeneration in tests/turn_test.go and run go test ./tests/ -run TestReplayHistories -update)",
			c.pos, c.id, c.constID, c.max, recordedHistories)
	}
}

// TestVersionsDeclared keeps versions.go the list of change IDs: each of
// its version constants is used by a GetVersion call, and no two share
// a value.
func TestVersionsDeclared(t *testing.T) {
	used := map[string]bool{}
	for _, c := range getVersionCalls(t) {
		used[c.constID] = true
	}
	byValue := map[string]string{}
	for name, v := range versionConsts(t) {
		if other, dup := byValue[v]; dup {
			t.Errorf("%s and %s share the change ID %q", other, name, v)
		}
		byValue[v] = name
		if !used[name] {
			t.Errorf("%s (%q) is declared in versions.go but no GetVersion call uses it", name, v)
		}
	}
}
