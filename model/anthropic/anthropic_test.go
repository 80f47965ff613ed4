package anthropic

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/wardenhq/warden/model"
	"github.com/wardenhq/warden/model/modeltest"
)

const testKey = "sk-ant-test-7c41e09b3a"

// newModel builds a model talking to s with the test key.
func newModel(t *testing.T, s *modeltest.Server, cfg Config) *Model {
	t.Helper()
	cfg.BaseURL = s.URL()
	if cfg.APIKey == "" {
		cfg.APIKey = testKey
	}
	if cfg.Model == "" {
		cfg.Model = "claude-test"
	}
	m, err := New(cfg)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	return m
}

// event is one server-sent event: its type and JSON data.
type event struct{ typ, data string }

// sse renders events as a text/event-stream reply.
func sse(events ...event) modeltest.Reply {
	var b strings.Builder
	for _, e := range events {
		fmt.Fprintf(&b, "event: %s\ndata: %s\n\n", e.typ, e.data)
	}
	return modeltest.Reply{Status: 200, Header: map[string]string{"Content-Type": "text/event-stream"}, Body: b.String()}
}

// conversation exercises every message kind.
func conversation() model.Request {
	return model.Request{
		Instruction: "You are a careful agent.",
		Messages: []model.Message{
			{Role: model.RoleUser, Content: "List the workspace and read go.mod"},
			{Role: model.RoleAssistant, Content: "Let me look.", ToolCalls: []model.ToolCall{
				{ID: "toolu_1", Name: "Bash", Input: json.RawMessage(`{"command":"ls"}`)},
				{ID: "toolu_2", Name: "Read", Input: json.RawMessage(`{"path":"nope"}`)},
			}},
			{Role: model.RoleTool, ToolCallID: "toolu_1", ToolName: "Bash", Content: "go.mod\nmain.go"},
			{Role: model.RoleTool, ToolCallID: "toolu_2", ToolName: "Read", Content: "no such file", IsError: true},
			{Role: model.RoleUser, Content: "Also check the README."},
		},
		Tools: []model.ToolSpec{
			{Name: "Bash", Description: "Run a shell command", InputSchema: json.RawMessage(
				`{"type":"object","properties":{"command":{"type":"string"}},"required":["command"],"additionalProperties":false}`)},
			{Name: "Noop", Description: "Takes nothing"},
		},
	}
}

// wantMessages is the messages array conversation() must produce: the
// two tool results and the user's text merged into one user message.
const wantMessages = `[
 {"role":"user","content":[{"type":"text","text":"List the workspace and read go.mod"}]},
 {"role":"assistant","content":[
   {"type":"text","text":"Let me look."},
   {"type":"tool_use","id":"toolu_1","name":"Bash","input":{"command":"ls"}},
   {"type":"tool_use","id":"toolu_2","name":"Read","input":{"path":"nope"}}]},
 {"role":"user","content":[
   {"type":"tool_result","tool_use_id":"toolu_1","content":[{"type":"text","text":"go.mod\nmain.go"}]},
   {"type":"tool_result","tool_use_id":"toolu_2","is_error":true,"content":[{"type":"text","text":"no such file"}]},
   {"type":"text","text":"Also check the README."}]}
]`

const wantTools = `[
 {"name":"Bash","description":"Run a shell command","input_schema":
   {"type":"object","properties":{"command":{"type":"string"}},"required":["command"],"additionalProperties":false}},
 {"name":"Noop","description":"Takes nothing","input_schema":{"type":"object","properties":{}}}
]`

// checkRequest asserts the parts of the request both modes share.
func checkRequest(t *testing.T, r modeltest.Request) map[string]json.RawMessage {
	t.Helper()
	if r.Method != http.MethodPost || r.Path != "/v1/messages" {
		t.Errorf("request = %s %s, want POST /v1/messages", r.Method, r.Path)
	}
	authHeader := ""
	switch {
	case r.Header.Get("X-Api-Key") == testKey:
		authHeader = "X-Api-Key"
	case r.Header.Get("Authorization") == "Bearer "+testKey:
		authHeader = "Authorization"
	default:
		t.Errorf("no auth header carries the key: %v", r.Header)
	}
	if r.Header.Get("Anthropic-Version") == "" {
		t.Errorf("anthropic-version header missing")
	}
	for k, vs := range r.Header {
		if strings.EqualFold(k, authHeader) {
			continue
		}
		for _, v := range vs {
			if strings.Contains(v, testKey) {
				t.Errorf("key leaked in header %s", k)
			}
		}
	}
	if strings.Contains(string(r.Body), testKey) {
		t.Errorf("key leaked in body")
	}
	var body map[string]json.RawMessage
	if err := json.Unmarshal(r.Body, &body); err != nil {
		t.Fatalf("request body: %v", err)
	}
	modeltest.JSONEqual(t, "model", body["model"], `"claude-test"`)
	modeltest.JSONEqual(t, "max_tokens", body["max_tokens"], `4096`)
	modeltest.JSONEqual(t, "system", body["system"], `[{"type":"text","text":"You are a careful agent."}]`)
	modeltest.JSONEqual(t, "messages", body["messages"], wantMessages)
	modeltest.JSONEqual(t, "tools", body["tools"], wantTools)
	return body
}

// wantResponse is what both modes must parse.
var wantResponse = model.Response{
	Text: "Reading two files.",
	ToolCalls: []model.ToolCall{
		{ID: "toolu_a", Name: "Read", Input: json.RawMessage(`{"path":"go.mod"}`)},
		{ID: "toolu_b", Name: "Bash", Input: json.RawMessage(`{"command":"cat README.md"}`)},
	},
	// 100 uncached input tokens, 8 written to the cache and 20 read from
	// it, each counted apart.
	Usage: model.Usage{InputTokens: 100, CacheWriteTokens: 8, CacheReadTokens: 20, OutputTokens: 34},
}

func checkResponse(t *testing.T, got model.Response) {
	t.Helper()
	if got.Text != wantResponse.Text {
		t.Errorf("Text = %q, want %q", got.Text, wantResponse.Text)
	}
	if got.Usage != wantResponse.Usage {
		t.Errorf("Usage = %+v, want %+v", got.Usage, wantResponse.Usage)
	}
	if len(got.ToolCalls) != len(wantResponse.ToolCalls) {
		t.Fatalf("ToolCalls = %+v, want %d calls", got.ToolCalls, len(wantResponse.ToolCalls))
	}
	for i, w := range wantResponse.ToolCalls {
		g := got.ToolCalls[i]
		if g.ID != w.ID || g.Name != w.Name {
			t.Errorf("call %d = %s %s, want %s %s", i, g.ID, g.Name, w.ID, w.Name)
		}
		modeltest.JSONEqual(t, fmt.Sprintf("call %d input", i), g.Input, string(w.Input))
	}
}

func TestGenerate(t *testing.T) {
	t.Parallel()
	f := modeltest.NewServer(t, modeltest.Reply{Status: 200, Body: `{
  "id": "msg_01", "type": "message", "role": "assistant", "model": "claude-test",
  "content": [
    {"type": "text", "text": "Reading "},
    {"type": "text", "text": "two files."},
    {"type": "tool_use", "id": "toolu_a", "name": "Read", "input": {"path": "go.mod"}},
    {"type": "tool_use", "id": "toolu_b", "name": "Bash", "input": {"command": "cat README.md"}}
  ],
  "stop_reason": "tool_use", "stop_sequence": null,
  "usage": {"input_tokens": 100, "output_tokens": 34, "cache_creation_input_tokens": 8, "cache_read_input_tokens": 20}
}`})
	m := newModel(t, f, Config{})
	got, err := m.Generate(context.Background(), conversation())
	if err != nil {
		t.Fatalf("Generate: %v", err)
	}
	checkResponse(t, got)
	reqs := f.Requests()
	if len(reqs) != 1 {
		t.Fatalf("%d requests, want 1", len(reqs))
	}
	body := checkRequest(t, reqs[0])
	if s, ok := body["stream"]; ok && string(s) != "false" {
		t.Errorf("stream = %s on a non-streamed request", s)
	}
}

func TestGenerateStream(t *testing.T) {
	t.Parallel()
	f := modeltest.NewServer(t, sse(
		event{"message_start", `{"type":"message_start","message":{"id":"msg_02","type":"message","role":"assistant","model":"claude-test","content":[],"stop_reason":null,"stop_sequence":null,"usage":{"input_tokens":100,"cache_creation_input_tokens":8,"cache_read_input_tokens":20,"output_tokens":1}}}`},
		event{"content_block_start", `{"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}`},
		event{"ping", `{"type":"ping"}`},
		event{"content_block_delta", `{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"Reading "}}`},
		event{"content_block_delta", `{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"two files."}}`},
		event{"content_block_stop", `{"type":"content_block_stop","index":0}`},
		event{"content_block_start", `{"type":"content_block_start","index":1,"content_block":{"type":"tool_use","id":"toolu_a","name":"Read","input":{}}}`},
		event{"content_block_delta", `{"type":"content_block_delta","index":1,"delta":{"type":"input_json_delta","partial_json":""}}`},
		event{"content_block_delta", `{"type":"content_block_delta","index":1,"delta":{"type":"input_json_delta","partial_json":"{\"pa"}}`},
		event{"content_block_delta", `{"type":"content_block_delta","index":1,"delta":{"type":"input_json_delta","partial_json":"th\": \"go.mod\"}"}}`},
		event{"content_block_stop", `{"type":"content_block_stop","index":1}`},
		event{"content_block_start", `{"type":"content_block_start","index":2,"content_block":{"type":"tool_use","id":"toolu_b","name":"Bash","input":{}}}`},
		event{"content_block_delta", `{"type":"content_block_delta","index":2,"delta":{"type":"input_json_delta","partial_json":"{\"command\": \"cat "}}`},
		event{"content_block_delta", `{"type":"content_block_delta","index":2,"delta":{"type":"input_json_delta","partial_json":"README.md\"}"}}`},
		event{"content_block_stop", `{"type":"content_block_stop","index":2}`},
		event{"message_delta", `{"type":"message_delta","delta":{"stop_reason":"tool_use","stop_sequence":null},"usage":{"output_tokens":34}}`},
		event{"message_stop", `{"type":"message_stop"}`},
	))
	m := newModel(t, f, Config{Stream: true})
	got, err := m.Generate(context.Background(), conversation())
	if err != nil {
		t.Fatalf("Generate: %v", err)
	}
	checkResponse(t, got)
	reqs := f.Requests()
	if len(reqs) != 1 {
		t.Fatalf("%d requests, want 1", len(reqs))
	}
	body := checkRequest(t, reqs[0])
	modeltest.JSONEqual(t, "stream", body["stream"], `true`)
}

const okBody = `{"id":"msg_ok","type":"message","role":"assistant","model":"claude-test",
 "content":[{"type":"text","text":"done"}],"stop_reason":"end_turn","stop_sequence":null,
 "usage":{"input_tokens":3,"output_tokens":1}}`

// okStream is a minimal streamed answer "done".
func okStream() modeltest.Reply {
	return sse(
		event{"message_start", `{"type":"message_start","message":{"id":"msg_ok","type":"message","role":"assistant","model":"claude-test","content":[],"stop_reason":null,"stop_sequence":null,"usage":{"input_tokens":3,"output_tokens":1}}}`},
		event{"content_block_start", `{"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}`},
		event{"content_block_delta", `{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"done"}}`},
		event{"content_block_stop", `{"type":"content_block_stop","index":0}`},
		event{"message_delta", `{"type":"message_delta","delta":{"stop_reason":"end_turn","stop_sequence":null},"usage":{"output_tokens":1}}`},
		event{"message_stop", `{"type":"message_stop"}`},
	)
}

func TestConformance(t *testing.T) {
	t.Parallel()
	modeltest.Run(t, modeltest.Provider{
		Name: "anthropic",
		Key:  testKey,
		New: func(t *testing.T, baseURL string, stream bool, maxRetries int) model.Model {
			m, err := New(Config{BaseURL: baseURL, APIKey: testKey, Model: "claude-test", Stream: stream, MaxRetries: maxRetries})
			if err != nil {
				t.Fatalf("New: %v", err)
			}
			return m
		},
		OK: func(stream bool) modeltest.Reply {
			if stream {
				return okStream()
			}
			return modeltest.Reply{Status: 200, Body: okBody}
		},
		ErrorBody: func(msg string) string {
			b, _ := json.Marshal(map[string]any{"type": "error", "error": map[string]any{"type": "api_error", "message": msg}})
			return string(b)
		},
		DefaultAttempts: 1 + DefaultMaxRetries,
		Errors: []modeltest.ErrorCase{
			{
				Name:   "401 names the error type",
				Reply:  modeltest.Reply{Status: 401, Header: modeltest.Fast(), Body: `{"type":"error","error":{"type":"authentication_error","message":"invalid x-api-key ` + testKey + `"}}`},
				Status: 401, Attempts: 1, Text: "authentication_error: invalid x-api-key",
			},
			{
				Name:   "400 not retried",
				Reply:  modeltest.Reply{Status: 400, Header: modeltest.Fast(), Body: `{"type":"error","error":{"type":"invalid_request_error","message":"messages: roles must alternate"}}`},
				Status: 400, Attempts: 1, Text: "roles must alternate",
			},
			{
				Name: "529 streamed after retries", Stream: true,
				Reply:  modeltest.Reply{Status: 529, Header: modeltest.Fast(), Body: `{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}`},
				Status: 529, Retryable: true, Attempts: 1 + DefaultMaxRetries, Text: "overloaded_error",
			},
		},
	})
}

func hello() model.Request {
	return model.Request{Messages: []model.Message{{Role: model.RoleUser, Content: "hi"}}}
}

func TestStreamErrorEvent(t *testing.T) {
	t.Parallel()
	// An error event after a 200 (overload mid-stream) is retryable but
	// has no HTTP status.
	f := modeltest.NewServer(t, sse(
		event{"message_start", `{"type":"message_start","message":{"id":"msg_e","type":"message","role":"assistant","model":"claude-test","content":[],"stop_reason":null,"stop_sequence":null,"usage":{"input_tokens":3,"output_tokens":1}}}`},
		event{"error", `{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}`},
	))
	m := newModel(t, f, Config{Stream: true})
	_, err := m.Generate(context.Background(), hello())
	var me *model.Error
	if !errors.As(err, &me) || me.Status != 0 || !me.Retryable {
		t.Fatalf("err = %v, want retryable *model.Error without status", err)
	}
	if !strings.Contains(err.Error(), "Overloaded") {
		t.Errorf("error %q does not name the cause", err)
	}
}

func TestMaxRetriesAndMaxTokens(t *testing.T) {
	t.Parallel()
	f := modeltest.NewServer(t, modeltest.Reply{Status: 429, Header: modeltest.Fast(), Body: `{"type":"error","error":{"type":"rate_limit_error","message":"slow down"}}`})
	m := newModel(t, f, Config{MaxRetries: -1, MaxTokens: 100})
	_, err := m.Generate(context.Background(), hello())
	var me *model.Error
	if !errors.As(err, &me) || me.Status != 429 || !me.Retryable {
		t.Fatalf("err = %v, want retryable 429", err)
	}
	reqs := f.Requests()
	if len(reqs) != 1 {
		t.Errorf("%d requests with retries disabled, want 1", len(reqs))
	}
	var body map[string]json.RawMessage
	if err := json.Unmarshal(reqs[0].Body, &body); err != nil {
		t.Fatal(err)
	}
	modeltest.JSONEqual(t, "max_tokens", body["max_tokens"], `100`)
}

func TestAPIKeyFromEnv(t *testing.T) {
	t.Setenv("ANTHROPIC_API_KEY", testKey)
	f := modeltest.NewServer(t, modeltest.Reply{Status: 200, Body: okBody})
	m, err := New(Config{BaseURL: f.URL(), Model: "m"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := m.Generate(context.Background(), hello()); err != nil {
		t.Fatalf("Generate: %v", err)
	}
	h := f.Requests()[0].Header
	if h.Get("X-Api-Key") != testKey && h.Get("Authorization") != "Bearer "+testKey {
		t.Errorf("key from $ANTHROPIC_API_KEY not sent: %v", h)
	}
}

func TestSystemMessagesAndEmptyToolResult(t *testing.T) {
	t.Parallel()
	f := modeltest.NewServer(t, modeltest.Reply{Status: 200, Body: okBody})
	m := newModel(t, f, Config{})
	req := model.Request{Messages: []model.Message{
		{Role: model.RoleSystem, Content: "Be brief."},
		{Role: model.RoleUser, Content: "run it"},
		{Role: model.RoleAssistant, ToolCalls: []model.ToolCall{{ID: "t1", Name: "Bash", Input: json.RawMessage(`"{broken"`)}}},
		{Role: model.RoleTool, ToolCallID: "t1"},
	}}
	if _, err := m.Generate(context.Background(), req); err != nil {
		t.Fatalf("Generate: %v", err)
	}
	var body map[string]json.RawMessage
	if err := json.Unmarshal(f.Requests()[0].Body, &body); err != nil {
		t.Fatal(err)
	}
	modeltest.JSONEqual(t, "system", body["system"], `[{"type":"text","text":"Be brief."}]`)
	modeltest.JSONEqual(t, "messages", body["messages"], `[
 {"role":"user","content":[{"type":"text","text":"run it"}]},
 {"role":"assistant","content":[{"type":"tool_use","id":"t1","name":"Bash","input":{}}]},
 {"role":"user","content":[{"type":"tool_result","tool_use_id":"t1"}]}
]`)
}

func TestNewValidates(t *testing.T) {
	t.Parallel()
	for _, cfg := range []Config{
		{},
		{Model: "m", BaseURL: "api.anthropic.com"},
		{Model: "m", MaxTokens: -1},
	} {
		if _, err := New(cfg); err == nil {
			t.Errorf("New(%+v) succeeded, want an error", cfg)
		}
	}
}

func TestInput(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{
		`{"a":1}`: `{"a":1}`,
		``:        `{}`,
		`{"a":`:   `"{\"a\":"`,
	} {
		if got := string(input(json.RawMessage(in))); got != want {
			t.Errorf("input(%q) = %s, want %s", in, got, want)
		}
	}
}
