// Package model defines the conversation types and the small interface
// model providers implement. Providers live in subpackages or here
// (Scripted); the workflow only sees the value types.
package model

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
)

// Role of a message's author.
type Role string

// The roles.
const (
	RoleSystem    Role = "system"
	RoleUser      Role = "user"
	RoleAssistant Role = "assistant"
	RoleTool      Role = "tool"
)

// Message is one entry of the conversation.
type Message struct {
	Role    Role   `json:"role"`
	Content string `json:"content,omitempty"`
	// ToolCalls the assistant asked for.
	ToolCalls []ToolCall `json:"tool_calls,omitempty"`
	// ToolCallID and ToolName identify the call a tool message answers.
	ToolCallID string `json:"tool_call_id,omitempty"`
	ToolName   string `json:"tool_name,omitempty"`
	IsError    bool   `json:"is_error,omitempty"`
	// Ref, when set, names the message's full content in the turn's
	// content store; Content is then only a preview. Model activities
	// resolve references before a provider sees the conversation.
	Ref string `json:"ref,omitempty"`
	// Size is the full content's length in bytes when Ref is set.
	Size int `json:"size,omitempty"`
}

// ToolCall is one tool invocation requested by the model.
type ToolCall struct {
	ID    string          `json:"id"`
	Name  string          `json:"name"`
	Input json.RawMessage `json:"input"`
}

// ToolSpec describes a tool to the model.
type ToolSpec struct {
	Name        string          `json:"name"`
	Description string          `json:"description"`
	InputSchema json.RawMessage `json:"input_schema"`
}

// Request is one model call.
type Request struct {
	Instruction string     `json:"instruction,omitempty"`
	Messages    []Message  `json:"messages"`
	Tools       []ToolSpec `json:"tools,omitempty"`
	// Script is the scripted model's steps (ignored by real providers).
	Script *Script `json:"script,omitempty"`
	// Purpose is empty for an agent step; "summarize" asks for a summary
	// of Messages (context compaction).
	Purpose string `json:"purpose,omitempty"`
}

// PurposeSummarize marks a request that asks for a summary of the
// conversation (see Request.Purpose).
const PurposeSummarize = "summarize"

// Response is the model's answer: text, tool calls, or both. No tool
// calls means the turn's final answer.
type Response struct {
	Text      string     `json:"text,omitempty"`
	ToolCalls []ToolCall `json:"tool_calls,omitempty"`
	Usage     Usage      `json:"usage,omitempty"`
}

// Usage counts tokens where a provider reports them, each kind apart:
// InputTokens is the input read at the full price, CacheReadTokens the
// input served from the provider's prompt cache (OpenAI's cached
// tokens, Anthropic's cache reads) and CacheWriteTokens the input
// written to it (Anthropic's cache creation). Cost is what the call cost
// in the currency of the price table, set only when the table prices the
// model (never a guess).
type Usage struct {
	InputTokens      int      `json:"input_tokens,omitempty" yaml:"input_tokens"`
	CacheReadTokens  int      `json:"cache_read_tokens,omitempty" yaml:"cache_read_tokens"`
	CacheWriteTokens int      `json:"cache_write_tokens,omitempty" yaml:"cache_write_tokens"`
	OutputTokens     int      `json:"output_tokens,omitempty" yaml:"output_tokens"`
	Cost             *float64 `json:"cost,omitempty" yaml:"cost"`
}

// Input is every input token: read, cached and written to the cache.
func (u Usage) Input() int { return u.InputTokens + u.CacheReadTokens + u.CacheWriteTokens }

// Total is every token, input and output.
func (u Usage) Total() int { return u.Input() + u.OutputTokens }

// Add returns u plus v. The sum has a cost when either has one (an
// unpriced call adds none: the sum then says what was priced).
func (u Usage) Add(v Usage) Usage {
	out := Usage{InputTokens: u.InputTokens + v.InputTokens, CacheReadTokens: u.CacheReadTokens + v.CacheReadTokens,
		CacheWriteTokens: u.CacheWriteTokens + v.CacheWriteTokens, OutputTokens: u.OutputTokens + v.OutputTokens}
	if u.Cost != nil || v.Cost != nil {
		c := u.CostOr0() + v.CostOr0()
		out.Cost = &c
	}
	return out
}

// CostOr0 is the cost, 0 when there is none.
func (u Usage) CostOr0() float64 {
	if u.Cost == nil {
		return 0
	}
	return *u.Cost
}

// String reads "120 in (20 cached, 0 written to cache), 34 out, cost
// 0.0012": the kinds a provider reported, the cost when priced.
func (u Usage) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%d in", u.Input())
	var parts []string
	if u.CacheReadTokens > 0 {
		parts = append(parts, fmt.Sprintf("%d cached", u.CacheReadTokens))
	}
	if u.CacheWriteTokens > 0 {
		parts = append(parts, fmt.Sprintf("%d written to cache", u.CacheWriteTokens))
	}
	if len(parts) > 0 {
		b.WriteString(" (" + strings.Join(parts, ", ") + ")")
	}
	fmt.Fprintf(&b, ", %d out", u.OutputTokens)
	if u.Cost != nil {
		fmt.Fprintf(&b, ", cost %s", FormatCost(*u.Cost))
	}
	return b.String()
}

// FormatCost prints a cost with enough digits for a small call
// ("0.000420") and cents for a large sum ("12.35").
func FormatCost(c float64) string {
	if c >= 10 {
		return fmt.Sprintf("%.2f", c)
	}
	return fmt.Sprintf("%.6f", c)
}

// Price is a model's price per million tokens of each kind. CachedInput
// and CacheWrite default to Input when zero (what the provider charges
// when it does not discount cached input); a model without a Price gets
// no cost.
type Price struct {
	Input       float64 `json:"input" yaml:"input"`
	CachedInput float64 `json:"cached_input,omitempty" yaml:"cached_input"`
	CacheWrite  float64 `json:"cache_write,omitempty" yaml:"cache_write"`
	Output      float64 `json:"output" yaml:"output"`
}

// Cost is what u costs at p.
func (p Price) Cost(u Usage) float64 {
	cached, write := p.CachedInput, p.CacheWrite
	if cached == 0 {
		cached = p.Input
	}
	if write == 0 {
		write = p.Input
	}
	return (float64(u.InputTokens)*p.Input + float64(u.CacheReadTokens)*cached +
		float64(u.CacheWriteTokens)*write + float64(u.OutputTokens)*p.Output) / 1e6
}

// Compaction records how a conversation that outgrew the model's context
// window was shrunk before a model call.
type Compaction struct {
	// Strategy is "trim" (old tool results shortened), "drop" (old
	// messages dropped) or "summarize" (old messages replaced by a
	// summary the model wrote).
	Strategy string `json:"strategy"`
	// From is the conversation head that was compacted; its content stays
	// in the store for audit.
	From           string `json:"from,omitempty"`
	MessagesBefore int    `json:"messages_before"`
	MessagesAfter  int    `json:"messages_after"`
	// Token counts are estimates (about four bytes a token).
	TokensBefore int `json:"tokens_before"`
	TokensAfter  int `json:"tokens_after"`
}

// Model generates the next assistant message.
type Model interface {
	Generate(ctx context.Context, req Request) (Response, error)
}
