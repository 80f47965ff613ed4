// Package chat posts waiting calls to Slack and checks what Slack sends
// back: a message per call (the tool, its capped input or diff, the
// agent's text, why it asks, the sandbox profile, the deadline, and
// buttons), updated once the call is answered, and the v0 signature of
// Slack's interactivity callbacks.
//
// Secrets come from the environment only: EnvBotToken and
// EnvSigningSecret, never from the config file.
package chat

import (
	"cmp"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"path"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/slack-go/slack"

	"github.com/wardenhq/warden/calls"
	"github.com/wardenhq/warden/workflows"
)

// Environment variables of the Slack secrets.
const (
	// EnvBotToken is the bot token (xoxb-...) messages are posted with.
	EnvBotToken = "WARDEN_SLACK_BOT_TOKEN"
	// EnvSigningSecret is the app's signing secret callbacks are checked with.
	EnvSigningSecret = "WARDEN_SLACK_SIGNING_SECRET"
)

// Header names of Slack's request signing.
const (
	HeaderSignature = "X-Slack-Signature"
	HeaderTimestamp = "X-Slack-Request-Timestamp"
)

// Window is how far a callback's timestamp may be from the clock.
const Window = 5 * time.Minute

// Action ids of the message's buttons, and the block and action ids of
// its reason field (whose text comes back with a click, in the payload's
// state). ActionRaise answers a budget approval with the raise its
// message states (LimitAgain).
const (
	ActionAllow  = "warden_allow"
	ActionDeny   = "warden_deny"
	ActionOpen   = "warden_open"
	ActionRaise  = "warden_raise"
	BlockReason  = "warden_reason_block"
	ActionReason = "warden_reason"
)

// MetadataType is the event type of the metadata every message carries
// (the call it is about), so a message can be found again in a channel.
const MetadataType = "warden_call"

// InputBytes caps the input (or diff) a message shows.
const InputBytes = 1500

// Errors of callback checks.
var (
	ErrNoSecret  = errors.New("slack signing secret is empty")
	ErrHeaders   = errors.New("missing slack signature headers")
	ErrTimestamp = errors.New("slack timestamp outside the 5-minute window")
	ErrSignature = errors.New("slack signature does not match")
)

// Sign returns the X-Slack-Signature of body sent at ts: "v0=" + hex
// HMAC-SHA256(secret, "v0:" + ts + ":" + body).
func Sign(secret string, ts time.Time, body []byte) string {
	m := hmac.New(sha256.New, []byte(secret))
	fmt.Fprintf(m, "v0:%d:", ts.Unix())
	m.Write(body)
	return "v0=" + hex.EncodeToString(m.Sum(nil))
}

// Verify checks a callback as Slack signs it: the timestamp is within
// Window of now, and the signature matches the raw body (compared in
// constant time). It does not stop a replay within the window: the
// caller keeps what it accepted.
func Verify(secret string, h http.Header, body []byte, now time.Time) error {
	if secret == "" {
		return ErrNoSecret
	}
	sig, tsRaw := h.Get(HeaderSignature), h.Get(HeaderTimestamp)
	if sig == "" || tsRaw == "" {
		return ErrHeaders
	}
	ts, err := strconv.ParseInt(tsRaw, 10, 64)
	if err != nil {
		return fmt.Errorf("%w: %q", ErrTimestamp, tsRaw)
	}
	sent := time.Unix(ts, 0)
	if d := now.Sub(sent); d > Window || d < -Window {
		return fmt.Errorf("%w: sent %s", ErrTimestamp, sent.UTC().Format(time.RFC3339))
	}
	if !hmac.Equal([]byte(sig), []byte(Sign(secret, sent, body))) {
		return ErrSignature
	}
	return nil
}

// StepUp says why a call may not be allowed from Slack ("": it may): it
// tripped a safety check no rule silences, its sandbox has the network
// on, it writes outside the working directories (a write grant beyond
// them), it runs without a sandbox, or its tool matches one of the rules (patterns of tool names,
// "Bash", "mcp__*"). Such a call gets "review in inbox" and no allow
// button, and an allow from Slack for it is refused.
func StepUp(p workflows.Pending, rules []string) string {
	switch {
	case p.BypassImmune:
		return "it trips a safety check"
	// p.Sandbox is calls.Sandbox.String() of the call's recorded profile.
	case strings.Contains(p.Sandbox, ", network to "):
		return "it asks for the network"
	case strings.Contains(p.Sandbox, ", may write "):
		return "it writes outside the working directories"
	case strings.HasPrefix(p.Sandbox, "no sandbox"):
		return "it runs without a sandbox"
	}
	for _, r := range rules {
		if ok, err := path.Match(r, p.Tool); err == nil && ok {
			return "chat.slack.step_up matches " + r
		}
	}
	return ""
}

// Reason is the text of the reason field a click carries ("" none).
func Reason(cb slack.InteractionCallback) string {
	if cb.BlockActionState == nil {
		return ""
	}
	if v, ok := cb.BlockActionState.Values[BlockReason][ActionReason]; ok {
		return strings.TrimSpace(v.Value)
	}
	return ""
}

// Value is a button's value: the call it answers and its hash.
func Value(workflowID string, p workflows.Pending) string {
	return workflowID + "|" + p.CallID + "|" + p.Hash
}

// InboxLink is the inbox page of a call, under the inbox's public
// address base ("" without one).
func InboxLink(base, workflowID, callID string) string {
	if base == "" {
		return ""
	}
	return strings.TrimSuffix(base, "/") + "/?workflow=" + url.QueryEscape(workflowID) +
		"#" + url.PathEscape(workflowID) + "/" + url.PathEscape(callID)
}

// ParseValue splits a button value.
func ParseValue(v string) (workflowID, callID, hash string, err error) {
	f := strings.Split(v, "|")
	if len(f) != 3 || f[0] == "" || f[1] == "" {
		return "", "", "", fmt.Errorf("malformed button value %q", v)
	}
	return f[0], f[1], f[2], nil
}

// LimitAgain is the raise a budget approval's message offers (its
// bound's limit once more, workflows.BudgetRequest.LimitAgain): what a
// click on its raise button adds. It reports false for an entry that is
// no budget approval, or whose bound does not read.
func LimitAgain(p workflows.Pending) (workflows.Budget, bool) {
	if p.Kind != workflows.PendingBudget {
		return workflows.Budget{}, false
	}
	var req workflows.BudgetRequest
	if err := json.Unmarshal(p.Input, &req); err != nil {
		return workflows.Budget{}, false
	}
	return req.LimitAgain()
}

// RaiseText reads a raise as a message shows it: "tokens +1000, cost +2".
func RaiseText(b workflows.Budget) string {
	return b.Join(" +", ", ")
}

// Blocks is the message of a waiting call. stepUp (StepUp's reason)
// leaves out the allow button. A budget approval gets budgetBlocks.
func Blocks(workflowID string, p workflows.Pending, inboxURL, stepUp string) []slack.Block {
	if p.Kind == workflows.PendingBudget {
		return budgetBlocks(workflowID, p, inboxURL, stepUp)
	}
	shown, what := calls.Unescaped(string(p.Input)), "Input"
	if p.Diff != "" {
		shown, what = p.Diff, "Diff"
	}
	head := fmt.Sprintf("*%s* waits for an approval in `%s` (call `%s`)", p.Tool, workflowID, p.CallID)
	bs := []slack.Block{
		slack.NewSectionBlock(slack.NewTextBlockObject(slack.MarkdownType, head, false, false), nil, nil),
		slack.NewSectionBlock(slack.NewTextBlockObject(slack.MarkdownType, what+":\n```"+clip(shown, InputBytes)+"```", false, false), nil, nil),
	}
	var facts []string
	if p.Context != "" {
		facts = append(facts, "*Agent:* "+clip(p.Context, 500))
	}
	if why := whyText(p); why != "" {
		facts = append(facts, "*Why it asks:* "+clip(why, 500))
	}
	if p.Sandbox != "" {
		facts = append(facts, "*Sandbox:* "+p.Sandbox)
	}
	if !p.Deadline.IsZero() {
		facts = append(facts, "*Deadline:* "+p.Deadline.UTC().Format("2006-01-02 15:04 MST"))
	}
	if p.Quorum > 1 {
		f := fmt.Sprintf("*Approvers:* needs %d distinct approvers (%s so far)", p.Quorum, workflows.QuorumText(p, len(p.Approvals)))
		if len(p.Approvals) > 0 {
			names := make([]string, len(p.Approvals))
			for i, a := range p.Approvals {
				names[i] = workflows.ApproverID(a)
			}
			f += "; allowed by " + strings.Join(names, ", ") + ", who cannot allow it again"
		}
		facts = append(facts, f)
	}
	if p.ReasonRequired {
		facts = append(facts, "*A reason is required* with the answer: type it below first.")
	}
	if len(facts) > 0 {
		bs = append(bs, slack.NewSectionBlock(slack.NewTextBlockObject(slack.MarkdownType, strings.Join(facts, "\n"), false, false), nil, nil))
	}
	// The reason field: its text comes back with either button's click.
	bs = append(bs, reasonField(!p.ReasonRequired))
	val := Value(workflowID, p)
	var buttons []slack.BlockElement
	if stepUp == "" {
		allow := slack.NewButtonBlockElement(ActionAllow, val, slack.NewTextBlockObject(slack.PlainTextType, "Allow once", false, false))
		allow.Style = slack.StylePrimary
		buttons = append(buttons, allow)
	} else {
		bs = append(bs, slack.NewContextBlock("", slack.NewTextBlockObject(slack.MarkdownType, "Review in inbox: "+stepUp+".", false, false)))
	}
	return append(bs, actions(buttons, val, "Deny", inboxURL))
}

// reasonField is the message's reason field (optional or required).
func reasonField(optional bool) *slack.InputBlock {
	reason := slack.NewPlainTextInputBlockElement(slack.NewTextBlockObject(slack.PlainTextType, "why, or a ticket", false, false), ActionReason)
	in := slack.NewInputBlock(BlockReason, slack.NewTextBlockObject(slack.PlainTextType, "Reason", false, false), nil, reason)
	in.Optional = optional
	return in
}

// actions is the message's buttons: those given, then a deny labelled
// deny and, with an inbox URL, a link to the entry there.
func actions(buttons []slack.BlockElement, val, deny, inboxURL string) *slack.ActionBlock {
	d := slack.NewButtonBlockElement(ActionDeny, val, slack.NewTextBlockObject(slack.PlainTextType, deny, false, false))
	d.Style = slack.StyleDanger
	buttons = append(buttons, d)
	if inboxURL != "" {
		open := slack.NewButtonBlockElement(ActionOpen, val, slack.NewTextBlockObject(slack.PlainTextType, "Open in inbox", false, false))
		open.URL = inboxURL
		buttons = append(buttons, open)
	}
	return slack.NewActionBlock("warden_actions", buttons...)
}

// budgetBlocks is the message of a budget approval: what was spent, the
// limit and what the turn was about to do, a reason field, a button that
// raises the budget by its limit once more (LimitAgain; left out under
// step-up, or when the bound does not read), one that denies (ending the
// turn), and a link to the inbox for other amounts.
func budgetBlocks(workflowID string, p workflows.Pending, inboxURL, stepUp string) []slack.Block {
	var req workflows.BudgetRequest
	_ = json.Unmarshal(p.Input, &req)
	head := fmt.Sprintf("*Budget* reached in `%s` (`%s`): the turn waits for a raise or a deny", workflowID, p.CallID)
	bs := []slack.Block{
		slack.NewSectionBlock(slack.NewTextBlockObject(slack.MarkdownType, head, false, false), nil, nil),
		slack.NewSectionBlock(slack.NewTextBlockObject(slack.MarkdownType, clip(p.Message, 1000), false, false), nil, nil),
	}
	var facts []string
	if req.Window != "" {
		facts = append(facts, fmt.Sprintf("*Agent budget:* %s, %s bound (store `%s`)", cmp.Or(req.Agent, "the namespace"), req.Window, req.Store))
	}
	if !p.Deadline.IsZero() {
		facts = append(facts, "*Deadline:* "+p.Deadline.UTC().Format("2006-01-02 15:04 MST")+" (then denied)")
	}
	raise, ok := LimitAgain(p)
	switch {
	case stepUp != "":
		facts = append(facts, "*Review in inbox:* "+stepUp+".")
	case ok:
		facts = append(facts, "*Raise* adds the limit once more ("+RaiseText(raise)+"); for other amounts, open it in the inbox.")
	default:
		facts = append(facts, "Raise it in the inbox.")
	}
	bs = append(bs, slack.NewSectionBlock(slack.NewTextBlockObject(slack.MarkdownType, strings.Join(facts, "\n"), false, false), nil, nil))
	bs = append(bs, reasonField(true))
	val := Value(workflowID, p)
	var buttons []slack.BlockElement
	if stepUp == "" && ok {
		b := slack.NewButtonBlockElement(ActionRaise, val, slack.NewTextBlockObject(slack.PlainTextType, clip("Raise: "+RaiseText(raise), 70), false, false))
		b.Style = slack.StylePrimary
		buttons = append(buttons, b)
	}
	return append(bs, actions(buttons, val, "Deny (end the turn)", inboxURL))
}

// AnsweredBlocks is the message of an answered call: what it was, and
// who answered it, how and when (and a budget approval's raise); no
// buttons.
func AnsweredBlocks(workflowID string, p workflows.Pending, a workflows.AnswerNote) []slack.Block {
	who := a.By
	if len(a.Approvers) > 1 {
		who = strings.Join(a.Approvers, ", ")
	}
	if who == "" {
		who = "someone"
	}
	line := fmt.Sprintf("*%s* `%s` in `%s`: *%s* by %s", p.Tool, p.CallID, workflowID, a.Decision, who)
	if a.Progress != "" {
		line += " (" + a.Progress + " approvals)"
	}
	if a.Via != "" && a.Via != a.By {
		line += " via " + a.Via
	}
	if !a.At.IsZero() {
		line += " at " + a.At.UTC().Format("2006-01-02 15:04:05 MST")
	}
	if a.Raise != nil {
		line += "\n*Raised by:* " + RaiseText(*a.Raise)
	}
	if a.Reason != "" {
		line += "\n*Reason:* " + clip(a.Reason, 500)
	}
	what := "```" + clip(calls.Unescaped(string(p.Input)), 300) + "```"
	if p.Kind == workflows.PendingBudget {
		what = clip(p.Message, 500)
	}
	return []slack.Block{
		slack.NewSectionBlock(slack.NewTextBlockObject(slack.MarkdownType, line, false, false), nil, nil),
		slack.NewSectionBlock(slack.NewTextBlockObject(slack.MarkdownType, what, false, false), nil, nil),
	}
}

// whyText is why a call asks, as a person reads it: the verdict's
// message, with the layer that decided ("Mode: default") after it in
// parentheses; the layer alone when there is no message.
func whyText(p workflows.Pending) string {
	switch {
	case p.Message == "":
		return p.Reason
	case p.Reason == "" || strings.Contains(p.Message, p.Reason):
		return p.Message
	}
	return p.Message + " (" + p.Reason + ")"
}

// clip cuts s to at most n bytes at a word boundary where there is one,
// marking the cut.
func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	c := s[:n]
	for !utf8.ValidString(c) {
		c = c[:len(c)-1]
	}
	if i := strings.LastIndexAny(c, " \n\t"); i > n/2 {
		c = c[:i]
	}
	return c + " …"
}

// Slack posts and updates messages with the Web API.
type Slack struct {
	api *slack.Client
}

// New is a Slack client with the bot token; apiURL ("": Slack's) points
// it elsewhere, such as a local stand-in.
func New(token, apiURL string, hc *http.Client) *Slack {
	opts := []slack.Option{}
	if apiURL != "" {
		opts = append(opts, slack.OptionAPIURL(strings.TrimSuffix(apiURL, "/")+"/"))
	}
	if hc == nil {
		hc = &http.Client{Timeout: 10 * time.Second}
	}
	opts = append(opts, slack.OptionHTTPClient(hc))
	return &Slack{api: slack.New(token, opts...)}
}

// RateLimited is Slack's 429: retry after RetryAfter.
type RateLimited struct{ RetryAfter time.Duration }

func (e *RateLimited) Error() string {
	return fmt.Sprintf("slack: rate limited, retry after %s", e.RetryAfter)
}

func wrap(op string, err error) error {
	var rl *slack.RateLimitedError
	if errors.As(err, &rl) {
		return fmt.Errorf("slack %s: %w", op, &RateLimited{RetryAfter: rl.RetryAfter})
	}
	return fmt.Errorf("slack %s: %w", op, err)
}

// Post posts the message of a waiting call to channel, with the call in
// its metadata, and returns where it is.
func (s *Slack) Post(ctx context.Context, channel, workflowID string, p workflows.Pending, inboxURL, stepUp string) (workflows.ChatRef, error) {
	text := fmt.Sprintf("%s waits for an approval (%s)", p.Tool, p.CallID)
	if p.Kind == workflows.PendingBudget {
		text = fmt.Sprintf("budget approval (%s): %s", p.CallID, clip(p.Message, 200))
	}
	ch, ts, err := s.api.PostMessageContext(ctx, channel,
		slack.MsgOptionText(text, false),
		slack.MsgOptionBlocks(Blocks(workflowID, p, inboxURL, stepUp)...),
		slack.MsgOptionMetadata(slack.SlackMetadata{EventType: MetadataType,
			EventPayload: map[string]any{"workflow_id": workflowID, "call_id": p.CallID}}))
	if err != nil {
		return workflows.ChatRef{}, wrap("chat.postMessage", err)
	}
	return workflows.ChatRef{Channel: ch, TS: ts}, nil
}

// Progress updates a call's message after an allow short of its quorum
// (p.Approvals holds it): the message as posted, its buttons live, saying
// who allowed so far.
func (s *Slack) Progress(ctx context.Context, ref workflows.ChatRef, workflowID string, p workflows.Pending, inboxURL, stepUp string) error {
	text := fmt.Sprintf("%s (%s): waiting: %s", p.Tool, p.CallID, p.Reason)
	if q := workflows.QuorumText(p, len(p.Approvals)); q != "" {
		text = fmt.Sprintf("%s (%s): %s approvals", p.Tool, p.CallID, q)
	}
	if _, _, _, err := s.api.UpdateMessageContext(ctx, ref.Channel, ref.TS,
		slack.MsgOptionText(text, false), slack.MsgOptionBlocks(Blocks(workflowID, p, inboxURL, stepUp)...)); err != nil {
		return wrap("chat.update", err)
	}
	return nil
}

// Answered updates a call's message once it is answered: who, how and
// when, and no more buttons.
func (s *Slack) Answered(ctx context.Context, ref workflows.ChatRef, workflowID string, p workflows.Pending, a workflows.AnswerNote) error {
	text := fmt.Sprintf("%s (%s): %s by %s", p.Tool, p.CallID, a.Decision, a.By)
	if _, _, _, err := s.api.UpdateMessageContext(ctx, ref.Channel, ref.TS,
		slack.MsgOptionText(text, false), slack.MsgOptionBlocks(AnsweredBlocks(workflowID, p, a)...)); err != nil {
		return wrap("chat.update", err)
	}
	return nil
}
