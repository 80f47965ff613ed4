package inbox

import (
	"bytes"
	"encoding/json"
	"fmt"
	"html/template"
	"slices"
	"strings"
	"time"

	"github.com/wardenhq/warden/calls"
	"github.com/wardenhq/warden/client"
	"github.com/wardenhq/warden/tools"
	"github.com/wardenhq/warden/workflows"
)

// entryView is what the entry template shows of a pending entry.
type entryView struct {
	client.PendingEntry
	Key     string
	Allowed bool
	Command string
	// Asked is the part of Command the engine asked about (a subcommand
	// of a compound command), split out so the page can mark it.
	Asked    [3]string
	Desc     string
	FilePath string
	Diff     []diffLine
	Pretty   string
	Ask      []tools.AskUserQuestion
	// Budget is a budget approval's request and its raise form.
	Budget *budgetView
	// User is who the entry is shown to.
	User string
	// Mark is who claimed the entry and until when the user snoozed it.
	Mark MarkState
	// YouAllowed: the user gave one of the allows of a quorum that is
	// not met yet (the turn takes no second one from them).
	YouAllowed bool
}

// budgetView is what a budget approval shows: the bound reached, what
// was spent and the limit, and the raise form's fields (the bound
// reached first, pre-filled with its limit once more).
type budgetView struct {
	workflows.BudgetRequest
	Bound  string
	Fields []raiseField
}

// raiseField is one amount of the raise form: Name is the bound as a
// raise names it (per_tool: "TOOL=N" items), Main the bound reached.
type raiseField struct {
	Name, Label, Hint, Value string
	Main                     bool
}

// budgetOf is the view of a budget approval's input.
func budgetOf(input []byte) *budgetView {
	var req workflows.BudgetRequest
	_ = json.Unmarshal(input, &req)
	v := &budgetView{BudgetRequest: req, Bound: req.Bound()}
	main, value := v.Bound, ""
	if tool, ok := strings.CutPrefix(v.Bound, "tool_calls:"); ok {
		main = "per_tool"
		if r, ok := req.LimitAgain(); ok {
			value = fmt.Sprintf("%s=%d", tool, r.PerTool[tool])
		}
	} else if r, ok := req.LimitAgain(); ok {
		_, value, _ = strings.Cut(r.RaiseText(), "=+")
	}
	for _, f := range []raiseField{
		{Name: "tokens", Label: "tokens", Hint: "1M"},
		{Name: "input_tokens", Label: "input tokens", Hint: "500K"},
		{Name: "output_tokens", Label: "output tokens", Hint: "100K"},
		{Name: "cost", Label: "cost", Hint: "2"},
		{Name: "tool_calls", Label: "tool calls", Hint: "100"},
		{Name: "time", Label: "time", Hint: "1h"},
		{Name: "per_tool", Label: "per tool", Hint: "Bash=50"},
	} {
		if f.Name == main {
			f.Main, f.Value = true, value
		}
		v.Fields = append(v.Fields, f)
	}
	return v
}

type diffLine struct {
	Op   string // "+", "-" or " "
	Text string
}

var funcs = template.FuncMap{
	"age": func(t time.Time) string { return fmtAge(time.Since(t)) },
	// left is the time until a deadline ("passed" once it has).
	"left": func(t time.Time) string {
		if d := time.Until(t); d > 0 {
			return fmtAge(d)
		}
		return "passed"
	},
	"ts":  func(t time.Time) string { return t.UTC().Format(time.RFC3339) },
	"inc": func(i int) int { return i + 1 },
	// list is its arguments as a slice (a select's options).
	"list": func(v ...string) []string { return v },
}

func fmtAge(d time.Duration) string {
	switch {
	case d < time.Minute:
		return fmt.Sprintf("%ds", int(d.Seconds()))
	case d < time.Hour:
		return fmt.Sprintf("%dm", int(d.Minutes()))
	case d < 48*time.Hour:
		return fmt.Sprintf("%dh%02dm", int(d.Hours()), int(d.Minutes())%60)
	default:
		return fmt.Sprintf("%dd", int(d.Hours()/24))
	}
}

// view prepares an entry for display: a Bash command, a Write or Edit as
// a diff, AskUser questions, anything else as indented JSON.
func (s *Server) view(user string, e client.PendingEntry) entryView {
	v := entryView{PendingEntry: e, Key: entryKey(e.WorkflowID, e.CallID), Allowed: s.may(user, e.Tool, e.Input, nil, e.Workdir, e.Links)}
	v.User = user
	v.YouAllowed = slices.ContainsFunc(e.Approvals, func(a workflows.Approval) bool { return a.By == user })
	// Indented as a person reads it: <, > and & as themselves, not as
	// Go's \u003e escapes (json.Indent keeps those).
	var b bytes.Buffer
	if json.Indent(&b, []byte(calls.Unescaped(string(e.Input))), "", "  ") == nil {
		v.Pretty = b.String()
	} else {
		v.Pretty = string(e.Input)
	}
	var in struct {
		Command     string `json:"command"`
		Description string `json:"description"`
		FilePath    string `json:"file_path"`
		Content     string `json:"content"`
		OldString   string `json:"old_string"`
		NewString   string `json:"new_string"`
	}
	_ = json.Unmarshal(e.Input, &in)
	switch e.Tool {
	case "Bash":
		v.Command, v.Desc = in.Command, in.Description
		v.Asked = markAsked(in.Command, e.Message)
	case "Write":
		v.FilePath = in.FilePath
		v.Diff = lines("+", in.Content)
	case "Edit":
		v.FilePath = in.FilePath
		v.Diff = append(lines("-", in.OldString), lines("+", in.NewString)...)
	case "AskUser":
		var ask tools.AskUserInput
		if json.Unmarshal(e.Input, &ask) == nil {
			v.Ask = ask.Questions
		}
	}
	if e.Kind == workflows.PendingBudget {
		v.Budget = budgetOf(e.Input)
	}
	if e.Diff != "" {
		// The diff against the file as it was when the call was decided.
		v.Diff = unified(e.Diff)
	}
	return v
}

// unified turns a unified diff into lines to show, hunk headers as "@".
func unified(d string) []diffLine {
	var out []diffLine
	for _, l := range strings.Split(strings.TrimSuffix(d, "\n"), "\n") {
		switch {
		case strings.HasPrefix(l, "--- "), strings.HasPrefix(l, "+++ "):
		case strings.HasPrefix(l, "@@"):
			out = append(out, diffLine{Op: "@", Text: l})
		case l == "":
			out = append(out, diffLine{Op: " "})
		case l[0] == '+' || l[0] == '-' || l[0] == ' ':
			out = append(out, diffLine{Op: l[:1], Text: l[1:]})
		default:
			out = append(out, diffLine{Op: "@", Text: l}) // "… (diff cut)"
		}
	}
	return out
}

// markAsked splits command around the part the decision message names:
// "(in `curl x`)" names a subcommand, "`curl` is not on the read-only
// list" a program, whose simple command is marked. Without either it
// returns the command whole in the first part.
func markAsked(command, message string) [3]string {
	whole := [3]string{command, "", ""}
	split := func(sub string) ([3]string, bool) {
		if i := strings.Index(command, sub); sub != "" && sub != command && i >= 0 {
			return [3]string{command[:i], sub, command[i+len(sub):]}, true
		}
		return whole, false
	}
	if _, rest, ok := strings.Cut(message, "(in `"); ok {
		if sub, _, ok := strings.Cut(rest, "`)"); ok {
			if v, ok := split(sub); ok {
				return v
			}
		}
	}
	_, rest, ok := strings.Cut(message, "`")
	if !ok {
		return whole
	}
	prog, _, ok := strings.Cut(rest, "`")
	if !ok || prog == "" || strings.ContainsAny(prog, " \t") {
		return whole
	}
	// The simple command that runs prog: split on the shell's list and
	// pipe operators.
	seg := strings.FieldsFunc(command, func(r rune) bool { return r == '&' || r == '|' || r == ';' || r == '\n' })
	for _, c := range seg {
		c = strings.TrimSpace(c)
		if c == prog || strings.HasPrefix(c, prog+" ") {
			v, _ := split(c)
			return v
		}
	}
	return whole
}

func lines(op, s string) []diffLine {
	if s == "" {
		return nil
	}
	var out []diffLine
	for _, l := range strings.Split(strings.TrimSuffix(s, "\n"), "\n") {
		out = append(out, diffLine{Op: op, Text: l})
	}
	return out
}
