// Package model defines the conversation types and the small interface
// model providers implement. Providers live in subpackages or here
// (Scripted); the workflow only sees the value types.
package model

import (
	"context"
	"encoding/json"
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

// Usage counts tokens where a provider reports them.
type Usage struct {
	InputTokens  int `json:"input_tokens,omitempty"`
	OutputTokens int `json:"output_tokens,omitempty"`
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
