package inbox

import (
	"bytes"
	"encoding/json"
	"fmt"
	"html/template"
	"strings"
	"time"

	"github.com/wardenhq/warden/client"
	"github.com/wardenhq/warden/tools"
)

// entryView is what the entry template shows of a pending entry.
type entryView struct {
	client.PendingEntry
	Key      string
	Allowed  bool
	Command  string
	Desc     string
	FilePath string
	Diff     []diffLine
	Pretty   string
	Ask      []tools.AskUserQuestion
}

type diffLine struct {
	Op   string // "+", "-" or " "
	Text string
}

var funcs = template.FuncMap{
	"age": func(t time.Time) string { return fmtAge(time.Since(t)) },
	"ts":  func(t time.Time) string { return t.UTC().Format(time.RFC3339) },
	"inc": func(i int) int { return i + 1 },
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
	v := entryView{PendingEntry: e, Key: e.WorkflowID + "\x1f" + e.CallID, Allowed: s.may(user, e.Tool, e.Input)}
	var b bytes.Buffer
	if json.Indent(&b, e.Input, "", "  ") == nil {
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
	return v
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
