// Package compact is the model activity's context-window compaction (an
// activities.Compactor): before a model call, a conversation that
// outgrew the model's context window is compacted.
// Old tool results are trimmed ("trim"), old messages are dropped
// ("drop"), or old messages are replaced by a summary the model writes
// ("summarize"), as Eino's summarization middleware and AgentScope's
// memory compression do. The model activity stores the compacted
// conversation as a new root that names the one it replaced, so the
// original content stays in the store for audit, and records the
// compaction in history (an event of the turn).
package compact

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/wardenhq/warden/config"
	"github.com/wardenhq/warden/content"
	"github.com/wardenhq/warden/model"
)

// The strategies.
const (
	Trim      = "trim"
	Drop      = "drop"
	Summarize = "summarize"
)

// Config is one model's compaction setting (config.Compaction, the
// file's content.compaction.NAME). The zero value of every field but
// ContextWindow has a default.
type Config struct {
	config.Compaction
}

// Validate checks a configuration.
func (c Config) Validate() error {
	if c.ContextWindow <= 0 {
		return errors.New("context_window must be a positive number of tokens")
	}
	if c.Trigger < 0 || c.Trigger > 1 || c.Target < 0 || c.Target > 1 {
		return errors.New("trigger and target are shares of the window, between 0 and 1")
	}
	if t, g := c.trigger(), c.target(); g >= t {
		return fmt.Errorf("target (%.2f) must be below trigger (%.2f)", g, t)
	}
	switch c.Strategy {
	case "", Trim, Drop, Summarize:
	default:
		return fmt.Errorf("unknown strategy %q (trim, drop or summarize)", c.Strategy)
	}
	return nil
}

func (c Config) trigger() float64 { return or(c.Trigger, 0.8) }
func (c Config) target() float64  { return or(c.Target, 0.5) }
func (c Config) keep() int {
	if c.KeepRecent > 0 {
		return c.KeepRecent
	}
	return 6
}

func or(v, def float64) float64 {
	if v > 0 {
		return v
	}
	return def
}

// Tokens estimates a conversation's size in tokens: about four bytes a
// token, plus a little per message and per tool call.
func Tokens(instruction string, msgs []model.Message, specs []model.ToolSpec) int {
	n := len(instruction)
	for _, m := range msgs {
		n += len(m.Content) + 16
		for _, c := range m.ToolCalls {
			n += len(c.Name) + len(c.Input) + 16
		}
	}
	for _, s := range specs {
		n += len(s.Name) + len(s.Description) + len(s.InputSchema)
	}
	return n / 4
}

// Compact implements activities.Compactor: it returns the compacted
// messages and a record, or nil when the conversation fits.
func (c Config) Compact(ctx context.Context, m model.Model, req model.Request) ([]model.Message, *model.Compaction, error) {
	before := Tokens(req.Instruction, req.Messages, req.Tools)
	if float64(before) < c.trigger()*float64(c.ContextWindow) {
		return nil, nil, nil
	}
	goal := int(c.target() * float64(c.ContextWindow))
	var (
		out []model.Message
		err error
	)
	strategy := c.Strategy
	if strategy == "" {
		strategy = Trim
	}
	switch strategy {
	case Trim:
		out = c.trim(req, goal)
	case Drop:
		out = c.drop(req, goal)
	case Summarize:
		out, err = c.summarize(ctx, m, req, goal)
	}
	if err != nil {
		return nil, nil, err
	}
	after := Tokens(req.Instruction, out, req.Tools)
	return out, &model.Compaction{Strategy: strategy, MessagesBefore: len(req.Messages), MessagesAfter: len(out),
		TokensBefore: before, TokensAfter: after}, nil
}

// trim shortens tool results, oldest first, until the conversation fits
// the goal; the last KeepRecent messages stay whole.
func (c Config) trim(req model.Request, goal int) []model.Message {
	out := slices.Clone(req.Messages)
	total := Tokens(req.Instruction, out, req.Tools)
	for i := 0; i < len(out)-c.keep() && total > goal; i++ {
		m := out[i]
		if m.Role != model.RoleTool || len(m.Content) <= 256 {
			continue
		}
		short := trimmed(m.Content)
		total -= (len(m.Content) - len(short)) / 4
		out[i].Content = short
	}
	return out
}

// trimmed is what remains of a trimmed tool result.
func trimmed(s string) string {
	head := s
	if len(head) > 200 {
		head = content.Preview(head[:200])
	}
	return fmt.Sprintf("%s\n[tool result trimmed to save context: %d bytes in all; the full output is kept in the turn's content store as %s]",
		head, len(s), content.ID([]byte(s)))
}

// cut is where the kept tail starts: the earliest index whose tail fits
// the goal, moved so that tool results stay with the call that asked for
// them, and never into the last KeepRecent messages.
func (c Config) cut(req model.Request, first int, budget int) int {
	msgs := req.Messages
	limit := max(len(msgs)-c.keep(), first)
	i := first
	for i < limit && Tokens("", msgs[i:], nil) > budget {
		i++
	}
	for i < len(msgs) && msgs[i].Role == model.RoleTool {
		i++
	}
	return i
}

// head returns how many leading messages are always kept: the first user
// message (the task).
func head(msgs []model.Message) int {
	if len(msgs) > 0 && msgs[0].Role == model.RoleUser {
		return 1
	}
	return 0
}

// drop removes the oldest messages after the task, leaving a note.
func (c Config) drop(req model.Request, goal int) []model.Message {
	h := head(req.Messages)
	fixed := Tokens(req.Instruction, req.Messages[:h], req.Tools) + 64
	i := c.cut(req, h, goal-fixed)
	if i <= h {
		return c.trim(req, goal)
	}
	out := slices.Clone(req.Messages[:h])
	out = append(out, model.Message{Role: model.RoleUser,
		Content: fmt.Sprintf("[%d earlier messages were dropped to fit the context window; they are kept in the turn's content store]", i-h)})
	return append(out, req.Messages[i:]...)
}

// summarize replaces the oldest messages after the task with a summary
// written by the model itself.
func (c Config) summarize(ctx context.Context, m model.Model, req model.Request, goal int) ([]model.Message, error) {
	h := head(req.Messages)
	fixed := Tokens(req.Instruction, req.Messages[:h], req.Tools) + goal/10
	i := c.cut(req, h, goal-fixed)
	if i <= h {
		return c.trim(req, goal), nil
	}
	old := req.Messages[h:i]
	// What is summarized must itself fit: trim long tool results first.
	part := c.trim(model.Request{Messages: old}, goal)
	resp, err := m.Generate(ctx, model.Request{Purpose: model.PurposeSummarize, Messages: part,
		Instruction: "Summarize the conversation so far for your own later use: the task, what was done, what was found, what remains. Be concise and keep facts such as paths, commands and results."})
	if err != nil {
		return nil, fmt.Errorf("summarize: %w", err)
	}
	out := slices.Clone(req.Messages[:h])
	out = append(out, model.Message{Role: model.RoleUser,
		Content: "[Summary of " + fmt.Sprint(len(old)) + " earlier messages, written to fit the context window; the originals are kept in the turn's content store]\n" + strings.TrimSpace(resp.Text)})
	return append(out, req.Messages[i:]...), nil
}
