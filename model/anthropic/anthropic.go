// Package anthropic implements [model.Model] on the Anthropic Messages
// API with the official SDK (github.com/anthropics/anthropic-sdk-go/v2).
//
// A conversation maps onto the Messages API as follows: the request's
// Instruction (and any system-role messages) becomes the system prompt;
// assistant messages become text and tool_use blocks; tool results
// become tool_result blocks (with is_error) in user messages, and
// consecutive messages of one role are merged into one message, so a
// batch of tool results (and any user text after it) is a single user
// turn; tools carry their JSON schema as input_schema.
//
// HTTP failures are returned as [*model.Error] after the SDK's own
// retries. The API key never appears in errors.
package anthropic

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"strings"

	"github.com/anthropics/anthropic-sdk-go/v2"
	"github.com/anthropics/anthropic-sdk-go/v2/option"

	"github.com/wardenhq/warden/model"
)

// provider is the Provider name in errors.
const provider = "anthropic"

// DefaultMaxTokens is the output cap when Config.MaxTokens is 0; the
// Messages API requires one.
const DefaultMaxTokens = 4096

// DefaultMaxRetries is the number of SDK retries (on 408, 409, 429, 5xx
// and connection errors) when Config.MaxRetries is 0.
const DefaultMaxRetries = 2

// Config configures a Model. Model is required; every other field has a
// usable zero value.
type Config struct {
	// BaseURL is the API root; empty means the SDK default,
	// $ANTHROPIC_BASE_URL, else https://api.anthropic.com.
	BaseURL string
	// APIKey authenticates the requests. Empty means $ANTHROPIC_API_KEY;
	// when that is empty too, the SDK's own credential chain applies
	// ($ANTHROPIC_AUTH_TOKEN, profiles). The key is never logged or put
	// in errors.
	APIKey string
	// Model is the model name sent with every request.
	Model string
	// MaxTokens caps the output; 0 means DefaultMaxTokens.
	MaxTokens int
	// Stream uses the streaming API and accumulates the events into one
	// Response. The result is the same as without streaming; streaming
	// keeps long generations from hitting idle timeouts.
	Stream bool
	// HTTPClient sends the requests; nil means the SDK's default client.
	HTTPClient *http.Client
	// MaxRetries is how often the SDK retries a failed request (408,
	// 409, 429, 5xx, connection errors), honouring Retry-After. 0 means
	// DefaultMaxRetries; a negative value disables retries, for example
	// when the caller (a Temporal activity) retries itself.
	MaxRetries int
}

// Model is a [model.Model] backed by the Messages API. It is safe for
// concurrent use.
type Model struct {
	client anthropic.Client
	cfg    Config
}

var _ model.Model = (*Model)(nil)

// New checks cfg and returns a Model. It makes no network calls.
func New(cfg Config) (*Model, error) {
	if strings.TrimSpace(cfg.Model) == "" {
		return nil, errors.New("anthropic: config: Model is required")
	}
	switch {
	case cfg.MaxTokens < 0:
		return nil, fmt.Errorf("anthropic: config: MaxTokens %d is negative", cfg.MaxTokens)
	case cfg.MaxTokens == 0:
		cfg.MaxTokens = DefaultMaxTokens
	}
	if cfg.APIKey == "" {
		cfg.APIKey = os.Getenv("ANTHROPIC_API_KEY")
	}
	switch {
	case cfg.MaxRetries == 0:
		cfg.MaxRetries = DefaultMaxRetries
	case cfg.MaxRetries < 0:
		cfg.MaxRetries = 0
	}
	opts := []option.RequestOption{option.WithMaxRetries(cfg.MaxRetries)}
	if cfg.APIKey != "" {
		opts = append(opts, option.WithAPIKey(cfg.APIKey))
	}
	if cfg.BaseURL != "" {
		u, err := url.Parse(cfg.BaseURL)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return nil, errors.New("anthropic: config: BaseURL must be an http or https URL")
		}
		opts = append(opts, option.WithBaseURL(cfg.BaseURL))
	}
	if cfg.HTTPClient != nil {
		opts = append(opts, option.WithHTTPClient(cfg.HTTPClient))
	}
	return &Model{client: anthropic.NewClient(opts...), cfg: cfg}, nil
}

// Generate implements [model.Model]: it sends the conversation and
// returns the assistant's text, tool calls and token usage.
func (m *Model) Generate(ctx context.Context, req model.Request) (model.Response, error) {
	params, err := m.params(req)
	if err != nil {
		return model.Response{}, err
	}
	var rec model.Attempts
	mw := option.WithMiddleware(func(req *http.Request, next option.MiddlewareNext) (*http.Response, error) {
		return rec.Do(req, next)
	})
	var msg *anthropic.Message
	if m.cfg.Stream {
		msg, err = m.stream(ctx, params, mw)
	} else {
		msg, err = m.client.Messages.New(ctx, params, mw)
	}
	if err != nil {
		return model.Response{}, rec.Classify(ctx, provider, err, m.cfg.APIKey)
	}
	return response(msg), nil
}

// stream makes one streamed call and accumulates its events.
func (m *Model) stream(ctx context.Context, params anthropic.MessageNewParams, opts ...option.RequestOption) (*anthropic.Message, error) {
	s := m.client.Messages.NewStreaming(ctx, params, opts...)
	defer s.Close()
	var msg anthropic.Message
	for s.Next() {
		if err := msg.Accumulate(s.Current()); err != nil {
			return nil, fmt.Errorf("accumulate stream: %w", err)
		}
	}
	if err := s.Err(); err != nil {
		return nil, err
	}
	return &msg, nil
}

// response maps a Messages API message to a model.Response. Input
// tokens include cache reads and writes.
func response(msg *anthropic.Message) model.Response {
	var (
		resp model.Response
		text strings.Builder
	)
	for _, b := range msg.Content {
		switch b.Type {
		case "text":
			text.WriteString(b.Text)
		case "tool_use":
			resp.ToolCalls = append(resp.ToolCalls, model.ToolCall{ID: b.ID, Name: b.Name, Input: input(b.Input)})
		}
	}
	resp.Text = text.String()
	u := msg.Usage
	resp.Usage = model.Usage{
		InputTokens:      int(u.InputTokens),
		CacheWriteTokens: int(u.CacheCreationInputTokens),
		CacheReadTokens:  int(u.CacheReadInputTokens),
		OutputTokens:     int(u.OutputTokens),
	}
	return resp
}

// input normalizes a tool_use input: valid JSON as is, {} when empty,
// else the text as a JSON string so input validation can report it.
func input(raw json.RawMessage) json.RawMessage {
	t := bytes.TrimSpace(raw)
	if len(t) == 0 {
		return json.RawMessage(`{}`)
	}
	if json.Valid(t) {
		return json.RawMessage(t)
	}
	b, _ := json.Marshal(string(raw)) // a string always marshals
	return b
}

// params maps a model.Request to Messages API parameters.
func (m *Model) params(req model.Request) (anthropic.MessageNewParams, error) {
	p := anthropic.MessageNewParams{
		Model:     anthropic.Model(m.cfg.Model),
		MaxTokens: int64(m.cfg.MaxTokens),
	}
	if req.Instruction != "" {
		p.System = append(p.System, anthropic.TextBlockParam{Text: req.Instruction})
	}
	type turn struct {
		role   model.Role
		blocks []anthropic.ContentBlockParamUnion
	}
	var turns []turn
	for i, msg := range req.Messages {
		role, blocks, err := blocks(msg)
		if err != nil {
			return p, fmt.Errorf("anthropic: messages[%d]: %w", i, err)
		}
		if role == model.RoleSystem {
			if msg.Content != "" {
				p.System = append(p.System, anthropic.TextBlockParam{Text: msg.Content})
			}
			continue
		}
		if len(blocks) == 0 {
			continue
		}
		// Merge into the previous message of the same role.
		if n := len(turns); n > 0 && turns[n-1].role == role {
			turns[n-1].blocks = append(turns[n-1].blocks, blocks...)
			continue
		}
		turns = append(turns, turn{role, blocks})
	}
	for _, t := range turns {
		if t.role == model.RoleAssistant {
			p.Messages = append(p.Messages, anthropic.NewAssistantMessage(t.blocks...))
		} else {
			p.Messages = append(p.Messages, anthropic.NewUserMessage(t.blocks...))
		}
	}
	for i, t := range req.Tools {
		s, err := inputSchema(t.InputSchema)
		if err != nil {
			return p, fmt.Errorf("anthropic: tools[%d] %q: %w", i, t.Name, err)
		}
		tp := anthropic.ToolParam{Name: t.Name, InputSchema: s}
		if t.Description != "" {
			tp.Description = anthropic.String(t.Description)
		}
		p.Tools = append(p.Tools, anthropic.ToolUnionParam{OfTool: &tp})
	}
	return p, nil
}

// blocks maps one conversation message to the role of the API message it
// belongs to (user for tool results) and its content blocks. Empty text
// is left out: the API rejects empty text blocks.
func blocks(msg model.Message) (model.Role, []anthropic.ContentBlockParamUnion, error) {
	var out []anthropic.ContentBlockParamUnion
	switch msg.Role {
	case model.RoleSystem:
		return model.RoleSystem, nil, nil
	case model.RoleUser:
		if msg.Content != "" {
			out = append(out, anthropic.NewTextBlock(msg.Content))
		}
		return model.RoleUser, out, nil
	case model.RoleAssistant:
		if msg.Content != "" {
			out = append(out, anthropic.NewTextBlock(msg.Content))
		}
		for _, tc := range msg.ToolCalls {
			out = append(out, anthropic.NewToolUseBlock(tc.ID, toolInput(tc.Input), tc.Name))
		}
		return model.RoleAssistant, out, nil
	case model.RoleTool:
		if msg.ToolCallID == "" {
			return "", nil, errors.New("tool message without tool_call_id")
		}
		tr := anthropic.ToolResultBlockParam{ToolUseID: msg.ToolCallID}
		if msg.Content != "" {
			tr.Content = []anthropic.ToolResultBlockParamContentUnion{{OfText: &anthropic.TextBlockParam{Text: msg.Content}}}
		}
		if msg.IsError {
			tr.IsError = anthropic.Bool(true)
		}
		return model.RoleUser, append(out, anthropic.ContentBlockParamUnion{OfToolResult: &tr}), nil
	default:
		return "", nil, fmt.Errorf("unknown role %q", msg.Role)
	}
}

// toolInput is a tool call's input as the API wants it: a JSON object.
// Anything else (such as bad arguments kept as a string by another
// provider) becomes {}.
func toolInput(in json.RawMessage) json.RawMessage {
	t := bytes.TrimSpace(in)
	if len(t) > 0 && t[0] == '{' && json.Valid(t) {
		return json.RawMessage(t)
	}
	return json.RawMessage(`{}`)
}

// inputSchema maps a tool's JSON schema onto the SDK's input_schema,
// keeping every keyword; an empty schema is an object with no
// properties.
func inputSchema(raw json.RawMessage) (anthropic.ToolInputSchemaParam, error) {
	var s anthropic.ToolInputSchemaParam
	t := bytes.TrimSpace(raw)
	if len(t) == 0 || bytes.Equal(t, []byte("null")) {
		s.Properties = map[string]any{}
		return s, nil
	}
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(t, &fields); err != nil {
		return s, fmt.Errorf("input schema: %w", err)
	}
	for k, v := range fields {
		switch k {
		case "type":
			// Always "object" for the Messages API.
		case "properties":
			s.Properties = v
		case "required":
			if err := json.Unmarshal(v, &s.Required); err != nil {
				return s, fmt.Errorf("input schema: required: %w", err)
			}
		default:
			if s.ExtraFields == nil {
				s.ExtraFields = map[string]any{}
			}
			s.ExtraFields[k] = v
		}
	}
	if s.Properties == nil {
		s.Properties = map[string]any{}
	}
	return s, nil
}
