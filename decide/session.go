package decide

import (
	"context"
	"encoding/json"
	"fmt"
	"path"
	"regexp"
	"slices"
	"strings"

	"github.com/wardenhq/warden/permission"
	"github.com/wardenhq/warden/tools"
)

// session is the layer of the session rules (permission.SessionPolicy):
// it finds the legs the call adds to its session (Verdict.Touches, which
// the turn records once the call ran) and, against what the session's
// earlier calls touched (Call.Session), asks or denies a call that would
// complete the lethal trifecta or break the Rule of Two, whatever the
// layers before it allowed: an allow rule, accept_edits, bypass, a
// remembered approval. A denied call touches nothing and is left alone.
// With the rules log-only (enforce: false) the verdict they would give
// is recorded in Verdict.WouldBe instead.
func session(ctx context.Context, d *decision, v permission.Verdict) (permission.Verdict, error) {
	sp := d.pc.Session
	if !sp.On() || v.Behavior == permission.Deny {
		return v, nil
	}
	own := callTouches(ctx, d, v)
	v.Touches = own
	b, rule, reason, clears := sessionCheck(sp, d.c.Session, own)
	if b == "" {
		return v, nil
	}
	if d.pc.Mode == permission.ModeDontAsk && b == permission.Ask {
		b = permission.Deny
	}
	if !sp.Enforced() {
		v.WouldBe = append(v.WouldBe, permission.Would{Layer: permission.LayerSession, Rule: rule, Behavior: b, Reason: reason})
		return v, nil
	}
	switch {
	case b == permission.Deny:
		v.Decision = permission.Decision{Behavior: permission.Deny, Reason: reason,
			Message: "Permission denied by the session rule " + rule + ": " + reason}
		v.Layer, v.Remembered = permission.LayerSession, ""
	case v.Behavior == permission.Ask || v.Behavior == permission.Passthrough:
		// It asks anyway: the approver reads the session's part too,
		// and an allow clears the leg as it would have.
		v.Reason += "; also " + reason
		v.Message += " (and the session rule " + rule + ": " + reason + ")"
		v.Clears = clears
	default:
		v.Decision = permission.Decision{Behavior: permission.Ask, Reason: reason, UpdatedInput: v.UpdatedInput,
			Message: "Permission required by the session rule " + rule + ": " + reason +
				". Allowing it vouches for the " + string(clears) + " input for the rest of the session."}
		v.Layer, v.Remembered, v.Clears = permission.LayerSession, "", clears
	}
	return v, nil
}

// sessionCheck applies the session rules sp to a call that adds own to
// a session that touched prior: the behaviour of the rule that applies
// ("" when none), the rule's name, the reason (it names the earlier
// calls) and the leg an approval clears.
func sessionCheck(sp *permission.SessionPolicy, prior *permission.Touched, own []permission.Touch) (b permission.Behavior, rule, reason string, clears permission.Leg) {
	has := func(l permission.Leg) *permission.Touch {
		for i := range own {
			if own[i].Leg == l {
				return &own[i]
			}
		}
		return nil
	}
	// The trifecta: this call sends out while the session holds
	// untrusted input (from earlier calls: this call's own response
	// comes after it sent) and private data (earlier, or read by this
	// call itself).
	out := has(permission.LegOut)
	for i := range own {
		if own[i].Leg == permission.LegOut && !own[i].Network {
			out = &own[i] // what the call names beats the grant it has
			break
		}
	}
	if sp.Trifecta != "" && out != nil && prior.Holds(permission.LegUntrusted) {
		priv := prior.Of(permission.LegPrivate)
		if p := has(permission.LegPrivate); p != nil {
			priv = append(priv, *p)
		}
		if len(priv) > 0 {
			un := prior.Of(permission.LegUntrusted)[0]
			reason = fmt.Sprintf("private data (%s) after untrusted input (%s); this call is a way out (%s) (trifecta: untrusted input, private data and a way out)",
				touchText(priv[0]), touchText(un), out.What)
			return sp.Trifecta, "trifecta", reason, permission.LegUntrusted
		}
	}
	if sp.RuleOfTwo == "" {
		return "", "", "", ""
	}
	// The Rule of Two: after this call the session would hold all three
	// of untrusted input, private data and a way to act (out, or any
	// change of state), and this call adds one of them.
	after := func(l permission.Leg) (*permission.Touch, bool) {
		if ts := prior.Of(l); len(ts) > 0 {
			return &ts[0], true
		}
		t := has(l)
		return t, t != nil
	}
	un, okU := after(permission.LegUntrusted)
	pr, okP := after(permission.LegPrivate)
	act, okA := after(permission.LegOut)
	if !okA {
		act, okA = after(permission.LegChange)
	}
	adds := has(permission.LegUntrusted) != nil || has(permission.LegPrivate) != nil || has(permission.LegOut) != nil || has(permission.LegChange) != nil
	if !okU || !okP || !okA || !adds {
		return "", "", "", ""
	}
	clears = permission.LegUntrusted
	if !prior.Holds(permission.LegUntrusted) {
		// This call brings the untrusted input: an approval vouches
		// for the private data held.
		clears = permission.LegPrivate
	}
	reason = fmt.Sprintf("the session would hold untrusted input (%s), private data (%s) and a way to act (%s) (Rule of Two: at most two of them)",
		touchText(*un), touchText(*pr), touchText(*act))
	return sp.RuleOfTwo, "rule_of_two", reason, clears
}

// touchText is a touch as a reason names it: "read of /w/.env in call
// c3", or "this call: read of /w/.env" for the call being decided.
func touchText(t permission.Touch) string {
	if t.CallID == "" {
		return "this call: " + t.What
	}
	return t.String()
}

// callTouches are the legs the call adds to its session when it runs,
// decided as v (the network it would get, the paths it reads and writes,
// the labels of the session policy). The touches carry no call id when
// the decision has none (Call.Turn.CallID).
func callTouches(ctx context.Context, d *decision, v permission.Verdict) []permission.Touch {
	c := d.c
	name := toolName(c)
	var out []permission.Touch
	add := func(l permission.Leg, what string, network bool) {
		for _, t := range out {
			if t.Leg == l && t.What == what {
				return
			}
		}
		out = append(out, permission.Touch{Leg: l, CallID: c.Turn.CallID, Tool: name, What: what, Network: network})
	}
	dirs := callDirs(c.Workdir, d.pc.WorkingDirs)
	ps := permission.Paths{Workdir: c.Workdir, Home: c.Home, Policy: d.pc}
	if processTool(name) {
		if on, hosts, _, _ := callNetwork(ctx, d.b, c, d.pc, v.Behavior != permission.Allow); on {
			h := hostsText(c.Input, hosts)
			add(permission.LegOut, "network to "+h, true)
			add(permission.LegUntrusted, "response from "+h, true)
		}
	}
	for _, acc := range callAccesses(d.b, c) {
		p := acc.Path
		switch {
		case acc.Write && !permission.Inside(p, dirs) && !scratchPath(p):
			add(permission.LegOut, "write of "+p+" (outside the working directories)", false)
		case !acc.Write && ps.SensitiveMatch(p, acc.Glob) != "":
			add(permission.LegPrivate, "read of "+p, false)
		case !acc.Write && !permission.Inside(p, dirs) && !systemPath(p):
			add(permission.LegUntrusted, "read of "+p+" (outside the working directories)", false)
		}
	}
	if name == "Bash" && matches(ctx, d, "Bash(git push:*)") {
		add(permission.LegOut, "git push", false)
	}
	if c.Tool != nil && c.Tool.Info().External {
		add(permission.LegOut, "call of the external tool "+name, false)
	}
	for _, l := range d.pc.Session.Labels {
		if !matches(ctx, d, l.Rule) {
			continue
		}
		for _, g := range l.Legs {
			add(g, "call of "+name+" (labelled "+string(g)+" by "+l.Rule+")", false)
		}
	}
	if !v.ReadOnly {
		add(permission.LegChange, "change of state ("+name+")", false)
	}
	// In the order of the legs, each leg's touches in the order found.
	slices.SortStableFunc(out, func(a, b permission.Touch) int {
		return slices.Index(permission.Legs(), a.Leg) - slices.Index(permission.Legs(), b.Leg)
	})
	return out
}

// processTool reports whether the tool runs processes of its own (the
// ones the network grants reach).
func processTool(name string) bool { return name == "Bash" || name == "PowerShell" }

// matches reports whether rule matches the call as a deny rule would
// (one simple command of a Bash line is enough).
func matches(ctx context.Context, d *decision, rule string) bool {
	r, err := permission.ParseRule(rule, permission.Deny)
	if err != nil || r.Tool != toolName(d.c) {
		return false
	}
	qc := permission.Context{Mode: permission.ModeDefault, WorkingDirs: d.pc.WorkingDirs, Deny: []permission.Rule{r}}
	m, err := permission.Evaluate(ctx, &qc, d.c.bind(&qc), d.c.Input)
	return err == nil && m.Layer == permission.LayerDenyRule
}

// access is one path a call reads or writes, resolved.
type access struct {
	Path  string
	Write bool
	Glob  bool
}

// callAccesses are the resolved paths the call reads and writes: a Bash
// command's (its analysis), a file tool's path.
func callAccesses(b bound, c Call) []access {
	name := toolName(c)
	var out []access
	if name == "Bash" {
		a, err := tools.BashAnalysis(b.env, c.Input)
		if err != nil {
			return nil
		}
		for _, acc := range a.Accesses() {
			if acc.Resolved {
				out = append(out, access{Path: path.Clean(acc.Path), Write: acc.Write, Glob: acc.Glob})
			}
		}
		return out
	}
	var in struct {
		FilePath string `json:"file_path"`
		Path     string `json:"path"`
	}
	if json.Unmarshal(c.Input, &in) != nil {
		return nil
	}
	p := in.FilePath
	if p == "" {
		p = in.Path
	}
	switch name {
	case "Read", "Glob", "Grep":
		if p == "" {
			p = c.Workdir
		}
	case "Write", "Edit":
	default:
		return nil
	}
	if p == "" {
		return nil
	}
	if !path.IsAbs(p) {
		p = path.Join(c.Workdir, p)
	}
	return []access{{Path: path.Clean(p), Write: name == "Write" || name == "Edit"}}
}

// systemPath reports whether p is under a directory of the system's own
// files, which a read of does not bring untrusted input.
func systemPath(p string) bool {
	return permission.Inside(p, []string{"/usr", "/lib", "/lib32", "/lib64", "/bin", "/sbin", "/etc", "/opt", "/proc", "/sys", "/dev", "/nix", "/snap"})
}

// scratchPath reports whether p is a path whose write goes nowhere: the
// null device and the standard streams. (/tmp is not one: the file
// tools write the host's, and other processes read it.)
func scratchPath(p string) bool {
	return permission.Inside(p, []string{"/dev/null", "/dev/stdout", "/dev/stderr", "/dev/fd", "/proc/self/fd"})
}

// urlHost finds the hosts of the URLs a call's input names.
var urlHost = regexp.MustCompile(`[a-zA-Z][a-zA-Z0-9+.-]*://(?:[^@/\s'"]*@)?([a-zA-Z0-9.-]+\.[a-zA-Z]{2,}|\[[0-9a-fA-F:]+\]|[0-9.]+)`)

// hostsText names the hosts a call may reach: those of the URLs its
// input names that its grant covers, else the grant's hosts (the first
// three).
func hostsText(input json.RawMessage, granted []string) string {
	var named []string
	for _, m := range urlHost.FindAllStringSubmatch(string(input), -1) {
		h := strings.ToLower(m[1])
		if permission.HostCovered(granted, h) != "" && !slices.Contains(named, h) {
			named = append(named, h)
		}
	}
	if len(named) > 0 {
		return strings.Join(named, ", ")
	}
	if len(granted) > 3 {
		return strings.Join(granted[:3], ", ") + fmt.Sprintf(" (and %d more hosts)", len(granted)-3)
	}
	if slices.Contains(granted, "*") {
		return "any public host"
	}
	return strings.Join(granted, ", ")
}
