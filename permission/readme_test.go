package permission

import (
	"bufio"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// readmeFile is the page of the manual that lists the engine's steps
// (README.md's map links it), and readmeSection its section.
const (
	readmeFile    = "../docs/permissions.md"
	readmeSection = "## Permissions and threat model"
)

// readmeSteps returns the names of the first numbered list of the
// section: the items' bold words ("1. **deny rule** — ..."), checking
// that the items are numbered 1, 2, 3, ...
func readmeSteps(t *testing.T, file string) []string {
	t.Helper()
	f, err := os.Open(file)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	item := regexp.MustCompile(`^(\d+)\. \*\*([^*]+)\*\*`)
	var names []string
	in := false
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Text()
		switch {
		case line == readmeSection:
			in = true
		case !in:
		case strings.HasPrefix(line, "#"):
			return names
		case item.MatchString(line):
			m := item.FindStringSubmatch(line)
			if n, _ := strconv.Atoi(m[1]); n != len(names)+1 {
				t.Fatalf("%s: item %q is numbered %d, want %d", file, m[2], n, len(names)+1)
			}
			names = append(names, m[2])
		case len(names) > 0 && line != "" && !strings.HasPrefix(line, "   "):
			return names // the text after the list
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return names
}

// TestStepsMatchREADME: the manual's list of the engine's layers is the
// list Evaluate walks, with the same names in the same order.
func TestStepsMatchREADME(t *testing.T) {
	t.Parallel()
	var code []string
	for _, s := range steps() {
		code = append(code, s.name)
	}
	doc := readmeSteps(t, readmeFile)
	if !slices.Equal(doc, code) {
		t.Errorf("%s (%s) lists the layers\n\t%q\nthe engine walks\n\t%q", readmeFile, readmeSection, doc, code)
	}
}

// TestStepsRecordLayers: every step records one of the verdict layers,
// each step's name is unique, and the last step (the mode) decides every
// call that reaches it.
func TestStepsRecordLayers(t *testing.T) {
	t.Parallel()
	layers := []Layer{LayerDenyRule, LayerAskRule, LayerSafety, LayerTool, LayerReadOnly, LayerAllowRule, LayerMode}
	seen := map[string]bool{}
	s := steps()
	for _, st := range s {
		if seen[st.name] {
			t.Errorf("step %q listed twice", st.name)
		}
		seen[st.name] = true
		if !slices.Contains(layers, st.layer) {
			t.Errorf("step %q records unknown layer %q", st.name, st.layer)
		}
	}
	last := s[len(s)-1]
	for _, m := range []Mode{ModeDefault, ModeAcceptEdits, ModeBypass, ModeDontAsk} {
		e := &evaluation{pc: &Context{Mode: m}, t: fakeTool{check: tPass}, name: "T", mode: m}
		if _, ok, err := last.decide(t.Context(), e); !ok || err != nil {
			t.Errorf("%s: the last step did not decide (%v)", m, err)
		}
	}
}
