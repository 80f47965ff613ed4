package openai

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/wardenhq/warden/model"
	"github.com/wardenhq/warden/model/modeltest"
)

const testKey = "sk-test-5f3a9c1e7b2d"

// newModel builds a model talking to s with the test key.
func newModel(t *testing.T, s *modeltest.Server, cfg Config) *Model {
	t.Helper()
	cfg.BaseURL = s.URL() + "/v1"
	if cfg.APIKey == "" {
		cfg.APIKey = testKey
	}
	if cfg.Model == "" {
		cfg.Model = "gpt-test"
	}
	m, err := New(cfg)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	return m
}

// sse renders data lines as a text/event-stream reply.
func sse(events ...string) modeltest.Reply {
	var b strings.Builder
	for _, e := range events {
		b.WriteString("data: " + e + "\n\n")
	}
	b.WriteString("data: [DONE]\n\n")
	return modeltest.Reply{Status: 200, Header: map[string]string{"Content-Type": "text/event-stream"}, Body: b.String()}
}

// conversation exercises every message kind.
func conversation() model.Request {
	return model.Request{
		Instruction: "You are a careful agent.",
		Messages: []model.Message{
			{Role: model.RoleUser, Content: "List the workspace and read go.mod"},
			{Role: model.RoleAssistant, Content: "Let me look.", ToolCalls: []model.ToolCall{
				{ID: "call_1", Name: "Bash", Input: json.RawMessage(`{"command":"ls"}`)},
				{ID: "call_2", Name: "Read", Input: json.RawMessage(`"{bad json"`)},
			}},
			{Role: model.RoleTool, ToolCallID: "call_1", ToolName: "Bash", Content: "go.mod\nmain.go"},
			{Role: model.RoleTool, ToolCallID: "call_2", ToolName: "Read", Content: "invalid input", IsError: true},
		},
		Tools: []model.ToolSpec{
			{Name: "Bash", Description: "Run a shell command", InputSchema: json.RawMessage(`{"type":"object","properties":{"command":{"type":"string"}},"required":["command"]}`)},
			{Name: "Noop", Description: "Takes nothing"},
		},
	}
}

// wantBody is the Chat Completions request conversation() must produce.
const wantMessages = `[
 {"role":"system","content":"You are a careful agent."},
 {"role":"user","content":"List the workspace and read go.mod"},
 {"role":"assistant","content":"Let me look.","tool_calls":[
   {"id":"call_1","type":"function","function":{"name":"Bash","arguments":"{\"command\":\"ls\"}"}},
   {"id":"call_2","type":"function","function":{"name":"Read","arguments":"{bad json"}}]},
 {"role":"tool","tool_call_id":"call_1","content":"go.mod\nmain.go"},
 {"role":"tool","tool_call_id":"call_2","content":"Error: invalid input"}
]`

const wantTools = `[
 {"type":"function","function":{"name":"Bash","description":"Run a shell command",
   "parameters":{"type":"object","properties":{"command":{"type":"string"}},"required":["command"]}}},
 {"type":"function","function":{"name":"Noop","description":"Takes nothing",
   "parameters":{"type":"object","properties":{}}}}
]`

// checkRequest asserts the parts of the request both modes share.
func checkRequest(t *testing.T, r modeltest.Request) map[string]json.RawMessage {
	t.Helper()
	if r.Method != http.MethodPost || r.Path != "/v1/chat/completions" {
		t.Errorf("request = %s %s, want POST /v1/chat/completions", r.Method, r.Path)
	}
	if got := r.Header.Get("Authorization"); got != "Bearer "+testKey {
		t.Errorf("Authorization = %q, want the bearer key", got)
	}
	for k, vs := range r.Header {
		if strings.EqualFold(k, "Authorization") {
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
	modeltest.JSONEqual(t, "model", body["model"], `"gpt-test"`)
	modeltest.JSONEqual(t, "messages", body["messages"], wantMessages)
	modeltest.JSONEqual(t, "tools", body["tools"], wantTools)
	modeltest.JSONEqual(t, "max_completion_tokens", body["max_completion_tokens"], `512`)
	modeltest.JSONEqual(t, "temperature", body["temperature"], `0.2`)
	if _, ok := body["max_tokens"]; ok {
		t.Errorf("max_tokens sent alongside max_completion_tokens")
	}
	return body
}

// wantResponse is what both modes must parse.
var wantResponse = model.Response{
	Text: "Reading two files.",
	ToolCalls: []model.ToolCall{
		{ID: "call_a", Name: "Read", Input: json.RawMessage(`{"path":"go.mod"}`)},
		{ID: "call_b", Name: "Bash", Input: json.RawMessage(`"{\"command\": \"ls"`)},
	},
	// 120 prompt tokens of which 20 were cached: counted apart.
	Usage: model.Usage{InputTokens: 100, CacheReadTokens: 20, OutputTokens: 34},
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

func testConfig(stream bool) Config {
	temp := 0.2
	return Config{MaxTokens: 512, Temperature: &temp, Stream: stream}
}

func TestGenerate(t *testing.T) {
	t.Parallel()
	f := modeltest.NewServer(t, modeltest.Reply{Status: 200, Body: `{
  "id": "chatcmpl-1", "object": "chat.completion", "created": 1700000000, "model": "gpt-test",
  "choices": [{"index": 0, "finish_reason": "tool_calls", "logprobs": null,
    "message": {"role": "assistant", "content": "Reading two files.", "refusal": null,
      "tool_calls": [
        {"id": "call_a", "type": "function", "function": {"name": "Read", "arguments": "{\"path\":\"go.mod\"}"}},
        {"id": "call_b", "type": "function", "function": {"name": "Bash", "arguments": "{\"command\": \"ls"}}]}}],
  "usage": {"prompt_tokens": 120, "completion_tokens": 34, "total_tokens": 154,
    "prompt_tokens_details": {"cached_tokens": 20, "audio_tokens": 0},
    "completion_tokens_details": {"reasoning_tokens": 0}}
}`})
	m := newModel(t, f, testConfig(false))
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
	if _, ok := body["stream"]; ok {
		t.Errorf("stream set on a non-streamed request: %s", body["stream"])
	}
}

func TestGenerateStream(t *testing.T) {
	t.Parallel()
	// Two tool calls whose ids, names and arguments arrive across
	// several chunks and interleave; usage comes in a last chunk with no
	// choices, as with stream_options.include_usage.
	chunk := func(delta string, finish string) string {
		fr := "null"
		if finish != "" {
			fr = `"` + finish + `"`
		}
		return `{"id":"chatcmpl-2","object":"chat.completion.chunk","created":1700000000,"model":"gpt-test",` +
			`"choices":[{"index":0,"delta":` + delta + `,"logprobs":null,"finish_reason":` + fr + `}]}`
	}
	f := modeltest.NewServer(t, sse(
		chunk(`{"role":"assistant","content":""}`, ""),
		chunk(`{"content":"Reading "}`, ""),
		chunk(`{"content":"two files."}`, ""),
		chunk(`{"tool_calls":[{"index":0,"id":"call_a","type":"function","function":{"name":"Read","arguments":""}}]}`, ""),
		chunk(`{"tool_calls":[{"index":0,"function":{"arguments":"{\"pa"}}]}`, ""),
		chunk(`{"tool_calls":[{"index":1,"id":"call_b","type":"function","function":{"name":"Bash","arguments":"{\"comm"}}]}`, ""),
		chunk(`{"tool_calls":[{"index":0,"function":{"arguments":"th\":\"go.mod\"}"}}]}`, ""),
		chunk(`{"tool_calls":[{"index":1,"function":{"arguments":"and\": \"ls"}}]}`, ""),
		chunk(`{}`, "tool_calls"),
		`{"id":"chatcmpl-2","object":"chat.completion.chunk","created":1700000000,"model":"gpt-test","choices":[],`+
			`"usage":{"prompt_tokens":120,"completion_tokens":34,"total_tokens":154,"prompt_tokens_details":{"cached_tokens":20}}}`,
	))
	m := newModel(t, f, testConfig(true))
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
	modeltest.JSONEqual(t, "stream_options", body["stream_options"], `{"include_usage":true}`)
}

func TestStreamCompleteCallsAtOneIndex(t *testing.T) {
	t.Parallel()
	// Some servers send each finished call whole, all at index 0.
	f := modeltest.NewServer(t, sse(
		`{"id":"c","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"call_x","type":"function","function":{"name":"A","arguments":"{}"}}]},"finish_reason":null}]}`,
		`{"id":"c","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"call_y","type":"function","function":{"name":"B","arguments":"{\"n\":1}"}}]},"finish_reason":"tool_calls"}]}`,
	))
	m := newModel(t, f, Config{Stream: true})
	got, err := m.Generate(context.Background(), model.Request{Messages: []model.Message{{Role: model.RoleUser, Content: "go"}}})
	if err != nil {
		t.Fatalf("Generate: %v", err)
	}
	if len(got.ToolCalls) != 2 || got.ToolCalls[0].ID != "call_x" || got.ToolCalls[1].ID != "call_y" ||
		got.ToolCalls[1].Name != "B" || string(got.ToolCalls[1].Input) != `{"n":1}` {
		t.Errorf("ToolCalls = %+v", got.ToolCalls)
	}
}

const okBody = `{"id":"c","object":"chat.completion","created":1,"model":"gpt-test",
 "choices":[{"index":0,"finish_reason":"stop","logprobs":null,"message":{"role":"assistant","content":"done","refusal":null}}],
 "usage":{"prompt_tokens":3,"completion_tokens":1,"total_tokens":4}}`

func TestConformance(t *testing.T) {
	t.Parallel()
	modeltest.Run(t, modeltest.Provider{
		Name: "openai",
		Key:  testKey,
		New: func(t *testing.T, baseURL string, stream bool, maxRetries int) model.Model {
			m, err := New(Config{BaseURL: baseURL + "/v1", APIKey: testKey, Model: "gpt-test", Stream: stream, MaxRetries: maxRetries})
			if err != nil {
				t.Fatalf("New: %v", err)
			}
			return m
		},
		OK: func(stream bool) modeltest.Reply {
			if stream {
				return sse(`{"id":"c","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{"content":"done"},"finish_reason":"stop"}]}`)
			}
			return modeltest.Reply{Status: 200, Body: okBody}
		},
		ErrorBody: func(msg string) string {
			b, _ := json.Marshal(map[string]any{"error": map[string]any{"message": msg, "type": "invalid_request_error"}})
			return string(b)
		},
		DefaultAttempts: 1 + DefaultMaxRetries,
		Errors: []modeltest.ErrorCase{
			{
				Name:   "vLLM-shaped 400",
				Reply:  modeltest.Reply{Status: 400, Header: modeltest.Fast(), Body: `{"object":"error","message":"This model's maximum context length is 4096 tokens.","type":"BadRequestError","param":null,"code":400}`},
				Status: 400, Attempts: 1, Text: "maximum context length",
			},
			{
				Name:   "404 html",
				Reply:  modeltest.Reply{Status: 404, Header: map[string]string{"Content-Type": "text/html"}, Body: `<html>not found</html>`},
				Status: 404, Attempts: 1, Text: "not found",
			},
		},
	})
}

func TestLegacyMaxTokensAndNoKey(t *testing.T) {
	t.Setenv("OPENAI_API_KEY", "")
	f := modeltest.NewServer(t, modeltest.Reply{Status: 200, Body: okBody})
	m, err := New(Config{BaseURL: f.URL() + "/v1", Model: "local", MaxTokens: 64, LegacyMaxTokens: true})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := m.Generate(context.Background(), model.Request{Messages: []model.Message{{Role: model.RoleUser, Content: "hi"}}}); err != nil {
		t.Fatalf("Generate: %v", err)
	}
	r := f.Requests()[0]
	if got := r.Header.Get("Authorization"); got != "" {
		t.Errorf("Authorization = %q with no key, want none", got)
	}
	var body map[string]json.RawMessage
	if err := json.Unmarshal(r.Body, &body); err != nil {
		t.Fatal(err)
	}
	modeltest.JSONEqual(t, "max_tokens", body["max_tokens"], `64`)
	if _, ok := body["max_completion_tokens"]; ok {
		t.Errorf("max_completion_tokens sent with LegacyMaxTokens")
	}
}

func TestAPIKeyFromEnv(t *testing.T) {
	t.Setenv("OPENAI_API_KEY", testKey)
	f := modeltest.NewServer(t, modeltest.Reply{Status: 200, Body: okBody})
	m, err := New(Config{BaseURL: f.URL() + "/v1", Model: "m"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := m.Generate(context.Background(), model.Request{Messages: []model.Message{{Role: model.RoleUser, Content: "hi"}}}); err != nil {
		t.Fatalf("Generate: %v", err)
	}
	if got := f.Requests()[0].Header.Get("Authorization"); got != "Bearer "+testKey {
		t.Errorf("Authorization = %q, want key from $OPENAI_API_KEY", got)
	}
}

func TestNewValidates(t *testing.T) {
	t.Parallel()
	for _, cfg := range []Config{
		{},
		{Model: "m", BaseURL: "localhost:8000"},
		{Model: "m", MaxTokens: -1},
	} {
		if _, err := New(cfg); err == nil {
			t.Errorf("New(%+v) succeeded, want an error", cfg)
		}
	}
}

func TestArgumentsRoundTrip(t *testing.T) {
	t.Parallel()
	for _, s := range []string{`{"a":1}`, `{bad`, ``, `[1,2]`} {
		in := arguments(s)
		if !json.Valid(in) {
			t.Errorf("arguments(%q) = %s, not JSON", s, in)
		}
		back := argumentString(in)
		want := s
		if s == "" {
			want = "{}"
		}
		if back != want {
			t.Errorf("argumentString(arguments(%q)) = %q, want %q", s, back, want)
		}
	}
}
