// Package openai implements [model.Model] on the OpenAI Chat Completions
// API with the official SDK (github.com/openai/openai-go/v3). Any server
// that speaks that API works through Config.BaseURL: OpenAI itself, vLLM,
// Ollama, LiteLLM, llama.cpp's server and others.
//
// A conversation maps onto Chat Completions as follows: the request's
// Instruction becomes a leading system message; assistant messages carry
// their tool calls as function tool_calls; tool results become role
// "tool" messages answering a tool_call_id; tools become function tools
// whose parameters are the tool's JSON schema.
//
// HTTP failures are returned as [*model.Error] after the SDK's own
// retries. The API key never appears in errors.
package openai

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

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/shared"

	"github.com/wardenhq/warden/model"
)

// provider is the Provider name in errors.
const provider = "openai"

// DefaultMaxRetries is the number of SDK retries (on 408, 409, 429, 5xx
// and connection errors) when Config.MaxRetries is 0.
const DefaultMaxRetries = 2

// Config configures a Model. Model is required; every other field has a
// usable zero value.
type Config struct {
	// BaseURL is the API root, such as "http://localhost:8000/v1" for
	// vLLM or "http://localhost:11434/v1" for Ollama. Empty means the
	// SDK default: $OPENAI_BASE_URL, else https://api.openai.com/v1.
	BaseURL string
	// APIKey is sent as a bearer token. Empty means $OPENAI_API_KEY;
	// when that is empty too, no Authorization header is sent (fine for
	// local servers). The key is never logged or put in errors.
	APIKey string
	// Model is the model name sent with every request.
	Model string
	// MaxTokens caps the completion length; 0 leaves it to the server.
	// It is sent as max_completion_tokens unless LegacyMaxTokens is set.
	MaxTokens int
	// LegacyMaxTokens sends MaxTokens as the older max_tokens field, for
	// servers that do not know max_completion_tokens. OpenAI's reasoning
	// models reject max_tokens.
	LegacyMaxTokens bool
	// Temperature is the sampling temperature; nil leaves it to the
	// server.
	Temperature *float64
	// Stream uses the streaming API and accumulates the text and tool
	// call deltas into one Response. The result is the same as without
	// streaming; streaming keeps long generations from hitting proxy
	// idle timeouts.
	Stream bool
	// HTTPClient sends the requests; nil means the SDK's default client.
	HTTPClient *http.Client
	// MaxRetries is how often the SDK retries a failed request (408,
	// 409, 429, 5xx, connection errors), honouring Retry-After. 0 means
	// DefaultMaxRetries; a negative value disables retries, for example
	// when the caller (a Temporal activity) retries itself.
	MaxRetries int
}

// Model is a [model.Model] backed by a Chat Completions endpoint. It is
// safe for concurrent use.
type Model struct {
	client openai.Client
	cfg    Config
}

var _ model.Model = (*Model)(nil)

// New checks cfg and returns a Model. It makes no network calls.
func New(cfg Config) (*Model, error) {
	if strings.TrimSpace(cfg.Model) == "" {
		return nil, errors.New("openai: config: Model is required")
	}
	if cfg.MaxTokens < 0 {
		return nil, fmt.Errorf("openai: config: MaxTokens %d is negative", cfg.MaxTokens)
	}
	if cfg.APIKey == "" {
		cfg.APIKey = os.Getenv("OPENAI_API_KEY")
	}
	switch {
	case cfg.MaxRetries == 0:
		cfg.MaxRetries = DefaultMaxRetries
	case cfg.MaxRetries < 0:
		cfg.MaxRetries = 0
	}
	opts := []option.RequestOption{
		option.WithMaxRetries(cfg.MaxRetries),
		// Always set: an empty key must stay empty (no Authorization
		// header) whatever the SDK's own environment defaults say.
		option.WithAPIKey(cfg.APIKey),
	}
	if cfg.BaseURL != "" {
		u, err := url.Parse(cfg.BaseURL)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return nil, errors.New("openai: config: BaseURL must be an http or https URL")
		}
		opts = append(opts, option.WithBaseURL(cfg.BaseURL))
	}
	if cfg.HTTPClient != nil {
		opts = append(opts, option.WithHTTPClient(cfg.HTTPClient))
	}
	return &Model{client: openai.NewClient(opts...), cfg: cfg}, nil
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
	var resp model.Response
	if m.cfg.Stream {
		resp, err = m.stream(ctx, params, mw)
	} else {
		resp, err = m.complete(ctx, params, mw)
	}
	if err != nil {
		return model.Response{}, rec.Classify(ctx, provider, err, m.cfg.APIKey)
	}
	return resp, nil
}

// usage is the model.Usage of an OpenAI usage report: its prompt tokens
// include the cached ones, which are counted apart.
func usage(u openai.CompletionUsage) model.Usage {
	cached := min(u.PromptTokensDetails.CachedTokens, u.PromptTokens)
	return model.Usage{InputTokens: int(u.PromptTokens - cached), CacheReadTokens: int(cached), OutputTokens: int(u.CompletionTokens)}
}

// complete makes one non-streamed call.
func (m *Model) complete(ctx context.Context, params openai.ChatCompletionNewParams, opts ...option.RequestOption) (model.Response, error) {
	cc, err := m.client.Chat.Completions.New(ctx, params, opts...)
	if err != nil {
		return model.Response{}, err
	}
	var resp model.Response
	resp.Usage = usage(cc.Usage)
	if len(cc.Choices) == 0 {
		return model.Response{}, errors.New("response has no choices")
	}
	msg := cc.Choices[0].Message
	resp.Text = msg.Content
	if resp.Text == "" {
		resp.Text = msg.Refusal
	}
	for _, tc := range msg.ToolCalls {
		switch tc.Type {
		case "function", "":
			resp.ToolCalls = append(resp.ToolCalls, model.ToolCall{
				ID: tc.ID, Name: tc.Function.Name, Input: arguments(tc.Function.Arguments),
			})
		case "custom":
			resp.ToolCalls = append(resp.ToolCalls, model.ToolCall{
				ID: tc.ID, Name: tc.Custom.Name, Input: arguments(tc.Custom.Input),
			})
		}
	}
	return resp, nil
}

// stream makes one streamed call and accumulates the deltas of the first
// choice.
func (m *Model) stream(ctx context.Context, params openai.ChatCompletionNewParams, opts ...option.RequestOption) (model.Response, error) {
	params.StreamOptions = openai.ChatCompletionStreamOptionsParam{IncludeUsage: openai.Bool(true)}
	s := m.client.Chat.Completions.NewStreaming(ctx, params, opts...)
	defer s.Close()

	var (
		text, refusal strings.Builder
		calls         []*partialCall
		byIndex       = map[int64]*partialCall{}
		resp          model.Response
	)
	for s.Next() {
		chunk := s.Current()
		if chunk.JSON.Usage.Valid() {
			resp.Usage = usage(chunk.Usage)
		}
		for _, ch := range chunk.Choices {
			if ch.Index != 0 {
				continue
			}
			text.WriteString(ch.Delta.Content)
			refusal.WriteString(ch.Delta.Refusal)
			for _, d := range ch.Delta.ToolCalls {
				pc := byIndex[d.Index]
				// A new id at a used index starts a new call: some
				// servers send every complete call at index 0.
				if pc == nil || (d.ID != "" && pc.id != "" && d.ID != pc.id) {
					pc = &partialCall{}
					byIndex[d.Index] = pc
					calls = append(calls, pc)
				}
				if d.ID != "" {
					pc.id = d.ID
				}
				pc.name += d.Function.Name
				pc.args.WriteString(d.Function.Arguments)
			}
		}
	}
	if err := s.Err(); err != nil {
		return model.Response{}, err
	}
	resp.Text = text.String()
	if resp.Text == "" {
		resp.Text = refusal.String()
	}
	for _, pc := range calls {
		resp.ToolCalls = append(resp.ToolCalls, model.ToolCall{ID: pc.id, Name: pc.name, Input: arguments(pc.args.String())})
	}
	return resp, nil
}

// partialCall is a tool call being assembled from stream deltas.
type partialCall struct {
	id, name string
	args     strings.Builder
}

// arguments turns a tool call's argument string into the call's input:
// the JSON itself when it is valid, {} when it is empty, else the text
// as a JSON string, so input validation can report the bad arguments
// back to the model.
func arguments(s string) json.RawMessage {
	t := strings.TrimSpace(s)
	if t == "" {
		return json.RawMessage(`{}`)
	}
	if json.Valid([]byte(t)) {
		return json.RawMessage(t)
	}
	b, _ := json.Marshal(s) // a string always marshals
	return b
}

// params maps a model.Request to Chat Completions parameters.
func (m *Model) params(req model.Request) (openai.ChatCompletionNewParams, error) {
	p := openai.ChatCompletionNewParams{Model: shared.ChatModel(m.cfg.Model)}
	if m.cfg.MaxTokens > 0 {
		if m.cfg.LegacyMaxTokens {
			p.MaxTokens = openai.Int(int64(m.cfg.MaxTokens))
		} else {
			p.MaxCompletionTokens = openai.Int(int64(m.cfg.MaxTokens))
		}
	}
	if m.cfg.Temperature != nil {
		p.Temperature = openai.Float(*m.cfg.Temperature)
	}
	if req.Instruction != "" {
		p.Messages = append(p.Messages, openai.SystemMessage(req.Instruction))
	}
	for i, msg := range req.Messages {
		mp, err := message(msg)
		if err != nil {
			return p, fmt.Errorf("openai: messages[%d]: %w", i, err)
		}
		p.Messages = append(p.Messages, mp)
	}
	for i, t := range req.Tools {
		fp, err := schema(t.InputSchema)
		if err != nil {
			return p, fmt.Errorf("openai: tools[%d] %q: %w", i, t.Name, err)
		}
		fd := shared.FunctionDefinitionParam{Name: t.Name, Parameters: fp}
		if t.Description != "" {
			fd.Description = openai.String(t.Description)
		}
		p.Tools = append(p.Tools, openai.ChatCompletionFunctionTool(fd))
	}
	return p, nil
}

// message maps one conversation message.
func message(msg model.Message) (openai.ChatCompletionMessageParamUnion, error) {
	switch msg.Role {
	case model.RoleSystem:
		return openai.SystemMessage(msg.Content), nil
	case model.RoleUser:
		return openai.UserMessage(msg.Content), nil
	case model.RoleAssistant:
		var a openai.ChatCompletionAssistantMessageParam
		if msg.Content != "" || len(msg.ToolCalls) == 0 {
			a.Content.OfString = openai.String(msg.Content)
		}
		for _, tc := range msg.ToolCalls {
			a.ToolCalls = append(a.ToolCalls, openai.ChatCompletionMessageToolCallUnionParam{
				OfFunction: &openai.ChatCompletionMessageFunctionToolCallParam{
					ID: tc.ID,
					Function: openai.ChatCompletionMessageFunctionToolCallFunctionParam{
						Name: tc.Name, Arguments: argumentString(tc.Input),
					},
				},
			})
		}
		return openai.ChatCompletionMessageParamUnion{OfAssistant: &a}, nil
	case model.RoleTool:
		if msg.ToolCallID == "" {
			return openai.ChatCompletionMessageParamUnion{}, errors.New("tool message without tool_call_id")
		}
		content := msg.Content
		if msg.IsError {
			// Chat Completions has no error flag on tool results.
			content = "Error: " + content
		}
		return openai.ToolMessage(content, msg.ToolCallID), nil
	default:
		return openai.ChatCompletionMessageParamUnion{}, fmt.Errorf("unknown role %q", msg.Role)
	}
}

// argumentString is the inverse of arguments: a JSON string input (bad
// arguments kept as text) goes back as that text, any other input as its
// JSON, an empty one as {}.
func argumentString(in json.RawMessage) string {
	t := bytes.TrimSpace(in)
	if len(t) == 0 {
		return "{}"
	}
	if t[0] == '"' {
		var s string
		if json.Unmarshal(t, &s) == nil {
			return s
		}
	}
	return string(t)
}

// schema decodes a tool's JSON schema; an empty one becomes an object
// with no properties.
func schema(raw json.RawMessage) (shared.FunctionParameters, error) {
	if len(bytes.TrimSpace(raw)) == 0 || bytes.Equal(bytes.TrimSpace(raw), []byte("null")) {
		return shared.FunctionParameters{"type": "object", "properties": map[string]any{}}, nil
	}
	var fp shared.FunctionParameters
	if err := json.Unmarshal(raw, &fp); err != nil {
		return nil, fmt.Errorf("input schema: %w", err)
	}
	return fp, nil
}
