package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"

	"github.com/wardenhq/warden/backend/local"
	"github.com/wardenhq/warden/config"
	"github.com/wardenhq/warden/permission"
	"github.com/wardenhq/warden/tools"
)

// newPermissionCmd is "starter permission": offline checks of the
// permission engine against the built-in tools on the local machine.
func newPermissionCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "permission",
		Short: "Inspect permission decisions",
	}
	cmd.AddCommand(newPermissionCheckCmd())
	return cmd
}

// permFlags are the flags of "permission check".
type permFlags struct {
	tool, input, mode, rules string
	workdirs                 []string
	jsonl                    bool
}

func newPermissionCheckCmd() *cobra.Command {
	var f permFlags
	cmd := &cobra.Command{
		Use:   "check --tool NAME --input JSON | --jsonl",
		Short: "Explain the decision for one tool call, or for JSON lines on stdin",
		Long: `check evaluates tool calls with the permission engine, locally and
without a Temporal connection.

With --tool and --input it prints the decision, the layer that decided,
why, and the suggested rules. With --jsonl it reads one request per line
on stdin:

  {"tool":"Bash","input":{"command":"ls"},"mode":"default",
   "workdirs":["/src"],"rules":{"allow":[],"ask":[],"deny":["Bash(rm:*)"]}}

and writes one JSON result (or {"error":...}) per request, in order.
--rules, --mode and --workdir give defaults the requests extend.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			base, err := f.baseContext()
			if err != nil {
				return err
			}
			if f.jsonl {
				if f.tool != "" || f.input != "" {
					return errors.New("--jsonl reads requests from stdin: drop --tool and --input")
				}
				return checkJSONL(cmd.Context(), cmd.InOrStdin(), cmd.OutOrStdout(), base, f.workdirs)
			}
			if f.tool == "" || f.input == "" {
				return errors.New("--tool and --input are required (or use --jsonl)")
			}
			res, err := checkOne(cmd.Context(), permRequest{Tool: f.tool, Input: json.RawMessage(f.input)}, base, f.workdirs)
			if err != nil {
				return err
			}
			printExplanation(cmd.OutOrStdout(), res)
			return nil
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&f.tool, "tool", "", "tool name, e.g. Bash")
	fl.StringVar(&f.input, "input", "", `tool input as JSON, e.g. '{"command":"ls"}'`)
	fl.StringVar(&f.mode, "mode", "", "permission mode: default, explore, accept_edits, bypass, dont_ask")
	fl.StringArrayVar(&f.workdirs, "workdir", nil, "working directory (repeatable; the first is the workspace, default the current directory)")
	fl.StringVar(&f.rules, "rules", "", "policy file (YAML or JSON)")
	fl.BoolVar(&f.jsonl, "jsonl", false, "read JSON requests from stdin, write JSON results to stdout")
	return cmd
}

// baseContext builds the context from --rules and --mode.
func (f permFlags) baseContext() (permission.Context, error) {
	var p permission.Policy
	if f.rules != "" {
		var err error
		if p, err = config.LoadPolicy(f.rules); err != nil {
			return permission.Context{}, err
		}
	}
	if f.mode != "" {
		p.Mode = permission.Mode(f.mode)
	}
	return p.Context()
}

// permRequest is one --jsonl request.
type permRequest struct {
	Tool     string          `json:"tool"`
	Input    json.RawMessage `json:"input"`
	Mode     permission.Mode `json:"mode,omitempty"`
	Workdirs []string        `json:"workdirs,omitempty"`
	Rules    struct {
		Allow []string `json:"allow,omitempty"`
		Ask   []string `json:"ask,omitempty"`
		Deny  []string `json:"deny,omitempty"`
	} `json:"rules"`
}

// permResult is one --jsonl result: the verdict of tools.Decide, the
// decision function the worker uses.
type permResult struct {
	Tool         string   `json:"tool"`
	Behavior     string   `json:"behavior"`
	ReadOnly     bool     `json:"read_only"`
	Layer        string   `json:"layer"`
	Rule         string   `json:"rule,omitempty"`
	ToolCheck    string   `json:"tool_check"`
	BypassImmune bool     `json:"bypass_immune"`
	Reason       string   `json:"reason"`
	Message      string   `json:"message"`
	Suggestions  []string `json:"suggestions"`
	// Invalid is the schema error the model would read; Behavior is then
	// "invalid".
	Invalid     string          `json:"invalid,omitempty"`
	Mode        permission.Mode `json:"mode"`
	WorkingDirs []string        `json:"working_dirs,omitempty"`

	toolDecision permission.Decision
}

func findTool(name string) (tools.Tool, bool) {
	for _, t := range tools.Builtins() {
		if t.Info().Name == name {
			return t, true
		}
	}
	return nil, false
}

// checkOne evaluates one request on top of base.
func checkOne(ctx context.Context, req permRequest, base permission.Context, workdirs []string) (permResult, error) {
	t, ok := findTool(req.Tool)
	if !ok {
		return permResult{}, fmt.Errorf("unknown tool %q", req.Tool)
	}
	if len(bytes.TrimSpace(req.Input)) == 0 {
		return permResult{}, errors.New("missing input")
	}
	if !json.Valid(req.Input) {
		return permResult{}, errors.New("input is not valid JSON")
	}
	pc := base
	pc.Allow = append([]permission.Rule(nil), base.Allow...)
	pc.Ask = append([]permission.Rule(nil), base.Ask...)
	pc.Deny = append([]permission.Rule(nil), base.Deny...)
	if req.Mode != "" {
		if !permission.ValidMode(req.Mode) {
			return permResult{}, fmt.Errorf("unknown mode %q", req.Mode)
		}
		pc.Mode = req.Mode
	}
	lists := []struct {
		b  permission.Behavior
		rs []string
	}{{permission.Allow, req.Rules.Allow}, {permission.Ask, req.Rules.Ask}, {permission.Deny, req.Rules.Deny}}
	for _, l := range lists {
		for _, s := range l.rs {
			r, err := permission.ParseRule(s, l.b)
			if err != nil {
				return permResult{}, err
			}
			r.Source = "request"
			pc.AddRule(r)
		}
	}
	if len(req.Workdirs) > 0 {
		workdirs = req.Workdirs
	}
	wd := ""
	if len(workdirs) > 0 {
		wd = workdirs[0]
	} else {
		var err error
		if wd, err = os.Getwd(); err != nil {
			return permResult{}, fmt.Errorf("workdir: %w", err)
		}
	}
	wd, err := filepath.Abs(wd)
	if err != nil {
		return permResult{}, fmt.Errorf("workdir: %w", err)
	}
	for _, d := range workdirs {
		if a, err := filepath.Abs(d); err == nil {
			pc.WorkingDirs = append(pc.WorkingDirs, a)
		}
	}
	// The local backend's home, resolved once here, outside the decision.
	home, _ := local.New(wd).Home(ctx)
	v, invalid := tools.DecideOrAsk(ctx, tools.Call{Tool: t, Input: req.Input, Workdir: wd, Home: home, Policy: &pc})
	if invalid != "" {
		return permResult{Tool: t.Info().Name, Behavior: "invalid", Invalid: invalid, Message: invalid,
			Suggestions: []string{}, Mode: pc.Mode, WorkingDirs: pc.WorkingDirs}, nil
	}
	res := permResult{
		Tool:         t.Info().Name,
		Behavior:     string(v.Behavior),
		ReadOnly:     v.ReadOnly,
		Layer:        string(v.Layer),
		ToolCheck:    string(v.Tool.Behavior),
		BypassImmune: v.BypassImmune,
		Reason:       v.Reason,
		Message:      v.Message,
		Suggestions:  []string{},
		Mode:         v.Mode,
		WorkingDirs:  v.WorkingDirs,
		toolDecision: v.Tool,
	}
	if v.Rule != nil {
		res.Rule = v.Rule.String()
	}
	for _, s := range v.Suggestions {
		res.Suggestions = append(res.Suggestions, s.String())
	}
	return res, nil
}

// checkJSONL answers one JSON line per non-blank input line.
func checkJSONL(ctx context.Context, in io.Reader, out io.Writer, base permission.Context, workdirs []string) error {
	sc := bufio.NewScanner(in)
	sc.Buffer(make([]byte, 64*1024), 16<<20)
	enc := newEncoder(out)
	enc.SetEscapeHTML(false)
	for sc.Scan() {
		line := bytes.TrimSpace(sc.Bytes())
		if len(line) == 0 {
			continue
		}
		var v any
		var req permRequest
		dec := json.NewDecoder(bytes.NewReader(line))
		dec.DisallowUnknownFields()
		err := dec.Decode(&req)
		if err == nil && dec.More() {
			err = errors.New("trailing data after request")
		}
		if err == nil {
			var res permResult
			if res, err = checkOne(ctx, req, base, workdirs); err == nil {
				v = res
			}
		}
		if err != nil {
			v = map[string]string{"error": err.Error()}
		}
		if err := enc.Encode(v); err != nil {
			return fmt.Errorf("write result: %w", err)
		}
	}
	if err := sc.Err(); err != nil {
		return fmt.Errorf("read requests: %w", err)
	}
	return nil
}

func printExplanation(w io.Writer, r permResult) {
	yes := func(b bool) string {
		if b {
			return "yes"
		}
		return "no"
	}
	fmt.Fprintf(w, "Decision:    %s\n", strings.ToUpper(r.Behavior))
	if r.Invalid != "" {
		fmt.Fprintf(w, "Invalid:     %s\n", r.Invalid)
		return
	}
	fmt.Fprintf(w, "Decided by:  %s (layer: %s)\n", r.Reason, r.Layer)
	fmt.Fprintf(w, "Why:         %s\n", r.Message)
	if r.BypassImmune {
		fmt.Fprintf(w, "Safety:      bypass-immune (allow rules cannot override it)\n")
	}
	fmt.Fprintf(w, "Tool:        %s (mode %s)\n", r.Tool, r.Mode)
	if len(r.WorkingDirs) > 0 {
		fmt.Fprintf(w, "Directories: %s\n", strings.Join(r.WorkingDirs, ", "))
	}
	fmt.Fprintf(w, "Read-only:   %s\n", yes(r.ReadOnly))
	tc := r.ToolCheck
	if r.toolDecision.BypassImmune {
		tc += " (safety)"
	}
	if r.toolDecision.Message != "" {
		tc += ": " + r.toolDecision.Message
	}
	fmt.Fprintf(w, "Tool check:  %s\n", tc)
	if len(r.Suggestions) == 0 {
		fmt.Fprintf(w, "Suggestions: none\n")
		return
	}
	fmt.Fprintf(w, "Suggestions: %s\n", strings.Join(r.Suggestions, ", "))
}
