package openai

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/wardenhq/warden/model"
)

const testKey = "sk-test-5f3a9c1e7b2d"

// reply is one canned HTTP answer of the fake server.
type reply struct {
	status int
	header map[string]string
	body   string
}

// fakeServer speaks the Chat Completions wire format from canned replies
// (the last one repeats) and records every request.
type fakeServer struct {
	t       *testing.T
	srv     *httptest.Server
	mu      sync.Mutex
	replies []reply
	reqs    []recorded
}

// recorded is one request the server received.
type recorded struct {
	method, path string
	header       http.Header
	body         []byte
}

func newFakeServer(t *testing.T, replies ...reply) *fakeServer {
	t.Helper()
	f := &fakeServer{t: t, replies: replies}
	f.srv = httptest.NewServer(http.HandlerFunc(f.serve))
	t.Cleanup(f.srv.Close)
	return f
}

func (f *fakeServer) serve(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(r.Body)
	if err != nil {
		f.t.Errorf("read request body: %v", err)
	}
	f.mu.Lock()
	f.reqs = append(f.reqs, recorded{method: r.Method, path: r.URL.Path, header: r.Header.Clone(), body: body})
	rp := f.replies[min(len(f.reqs), len(f.replies))-1]
	f.mu.Unlock()
	for k, v := range rp.header {
		w.Header().Set(k, v)
	}
	if w.Header().Get("Content-Type") == "" {
		w.Header().Set("Content-Type", "application/json")
	}
	w.WriteHeader(rp.status)
	_, _ = io.WriteString(w, rp.body)
}

func (f *fakeServer) requests() []recorded {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]recorded(nil), f.reqs...)
}

func (f *fakeServer) model(t *testing.T, cfg Config) *Model {
	t.Helper()
	cfg.BaseURL = f.srv.URL + "/v1"
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
func sse(events ...string) reply {
	var b strings.Builder
	for _, e := range events {
		b.WriteString("data: " + e + "\n\n")
	}
	b.WriteString("data: [DONE]\n\n")
	return reply{status: 200, header: map[string]string{"Content-Type": "text/event-stream"}, body: b.String()}
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

// jsonEqual reports whether two JSON texts hold the same value.
func jsonEqual(t *testing.T, what string, got json.RawMessage, want string) {
	t.Helper()
	var g, w any
	if err := json.Unmarshal(got, &g); err != nil {
		t.Fatalf("%s: got invalid JSON %s: %v", what, got, err)
	}
	if err := json.Unmarshal([]byte(want), &w); err != nil {
		t.Fatalf("%s: want invalid JSON: %v", what, err)
	}
	gb, _ := json.Marshal(g)
	wb, _ := json.Marshal(w)
	if string(gb) != string(wb) {
		t.Errorf("%s:\n got %s\nwant %s", what, gb, wb)
	}
}

// checkRequest asserts the parts of the request both modes share.
func checkRequest(t *testing.T, r recorded) map[string]json.RawMessage {
	t.Helper()
	if r.method != http.MethodPost || r.path != "/v1/chat/completions" {
		t.Errorf("request = %s %s, want POST /v1/chat/completions", r.method, r.path)
	}
	if got := r.header.Get("Authorization"); got != "Bearer "+testKey {
		t.Errorf("Authorization = %q, want the bearer key", got)
	}
	for k, vs := range r.header {
		if strings.EqualFold(k, "Authorization") {
			continue
		}
		for _, v := range vs {
			if strings.Contains(v, testKey) {
				t.Errorf("key leaked in header %s", k)
			}
		}
	}
	if strings.Contains(string(r.body), testKey) {
		t.Errorf("key leaked in body")
	}
	var body map[string]json.RawMessage
	if err := json.Unmarshal(r.body, &body); err != nil {
		t.Fatalf("request body: %v", err)
	}
	jsonEqual(t, "model", body["model"], `"gpt-test"`)
	jsonEqual(t, "messages", body["messages"], wantMessages)
	jsonEqual(t, "tools", body["tools"], wantTools)
	jsonEqual(t, "max_completion_tokens", body["max_completion_tokens"], `512`)
	jsonEqual(t, "temperature", body["temperature"], `0.2`)
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
	Usage: model.Usage{InputTokens: 120, OutputTokens: 34},
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
		jsonEqual(t, fmt.Sprintf("call %d input", i), g.Input, string(w.Input))
	}
}

func testConfig(stream bool) Config {
	temp := 0.2
	return Config{MaxTokens: 512, Temperature: &temp, Stream: stream}
}

func TestGenerate(t *testing.T) {
	f := newFakeServer(t, reply{status: 200, body: `{
  "id": "chatcmpl-1", "object": "chat.completion", "created": 1700000000, "model": "gpt-test",
  "choices": [{"index": 0, "finish_reason": "tool_calls", "logprobs": null,
    "message": {"role": "assistant", "content": "Reading two files.", "refusal": null,
      "tool_calls": [
        {"id": "call_a", "type": "function", "function": {"name": "Read", "arguments": "{\"path\":\"go.mod\"}"}},
        {"id": "call_b", "type": "function", "function": {"name": "Bash", "arguments": "{\"command\": \"ls"}}]}}],
  "usage": {"prompt_tokens": 120, "completion_tokens": 34, "total_tokens": 154}
}`})
	m := f.model(t, testConfig(false))
	got, err := m.Generate(context.Background(), conversation())
	if err != nil {
		t.Fatalf("Generate: %v", err)
	}
	checkResponse(t, got)
	reqs := f.requests()
	if len(reqs) != 1 {
		t.Fatalf("%d requests, want 1", len(reqs))
	}
	body := checkRequest(t, reqs[0])
	if _, ok := body["stream"]; ok {
		t.Errorf("stream set on a non-streamed request: %s", body["stream"])
	}
}

func TestGenerateStream(t *testing.T) {
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
	f := newFakeServer(t, sse(
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
			`"usage":{"prompt_tokens":120,"completion_tokens":34,"total_tokens":154}}`,
	))
	m := f.model(t, testConfig(true))
	got, err := m.Generate(context.Background(), conversation())
	if err != nil {
		t.Fatalf("Generate: %v", err)
	}
	checkResponse(t, got)
	reqs := f.requests()
	if len(reqs) != 1 {
		t.Fatalf("%d requests, want 1", len(reqs))
	}
	body := checkRequest(t, reqs[0])
	jsonEqual(t, "stream", body["stream"], `true`)
	jsonEqual(t, "stream_options", body["stream_options"], `{"include_usage":true}`)
}

func TestStreamCompleteCallsAtOneIndex(t *testing.T) {
	// Some servers send each finished call whole, all at index 0.
	f := newFakeServer(t, sse(
		`{"id":"c","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"call_x","type":"function","function":{"name":"A","arguments":"{}"}}]},"finish_reason":null}]}`,
		`{"id":"c","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"call_y","type":"function","function":{"name":"B","arguments":"{\"n\":1}"}}]},"finish_reason":"tool_calls"}]}`,
	))
	m := f.model(t, Config{Stream: true})
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

// fast makes the SDK retry at once.
var fast = map[string]string{"Retry-After-Ms": "1"}

func TestRetryThenSuccess(t *testing.T) {
	for _, stream := range []bool{false, true} {
		t.Run(fmt.Sprintf("stream=%v", stream), func(t *testing.T) {
			ok := reply{status: 200, body: okBody}
			if stream {
				ok = sse(`{"id":"c","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{"content":"done"},"finish_reason":"stop"}]}`)
			}
			f := newFakeServer(t,
				reply{status: 429, header: fast, body: `{"error":{"message":"Rate limit reached","type":"requests","code":"rate_limit_exceeded"}}`},
				ok)
			m := f.model(t, Config{Stream: stream})
			got, err := m.Generate(context.Background(), model.Request{Messages: []model.Message{{Role: model.RoleUser, Content: "hi"}}})
			if err != nil {
				t.Fatalf("Generate: %v", err)
			}
			if got.Text != "done" {
				t.Errorf("Text = %q, want done", got.Text)
			}
			if n := len(f.requests()); n != 2 {
				t.Errorf("%d requests, want 2 (429 then success)", n)
			}
		})
	}
}

func TestErrors(t *testing.T) {
	tests := []struct {
		name       string
		reply      reply
		stream     bool
		wantStatus int
		retryable  bool
		attempts   int
		wantText   string
	}{
		{
			name:       "401 not retried",
			reply:      reply{status: 401, header: fast, body: `{"error":{"message":"Incorrect API key provided: ` + testKey + `.","type":"invalid_request_error","code":"invalid_api_key"}}`},
			wantStatus: 401, retryable: false, attempts: 1, wantText: "Incorrect API key provided",
		},
		{
			name:       "401 streamed",
			stream:     true,
			reply:      reply{status: 401, header: fast, body: `{"error":{"message":"bad key ` + testKey + `","type":"invalid_request_error"}}`},
			wantStatus: 401, retryable: false, attempts: 1, wantText: "bad key",
		},
		{
			name:       "500 after retries",
			reply:      reply{status: 500, header: fast, body: `{"error":{"message":"The server had an error","type":"server_error"}}`},
			wantStatus: 500, retryable: true, attempts: 3, wantText: "The server had an error",
		},
		{
			name:       "500 streamed after retries",
			stream:     true,
			reply:      reply{status: 503, header: fast, body: `upstream unavailable`},
			wantStatus: 503, retryable: true, attempts: 3, wantText: "upstream unavailable",
		},
		{
			name:       "vLLM-shaped 400",
			reply:      reply{status: 400, header: fast, body: `{"object":"error","message":"This model's maximum context length is 4096 tokens.","type":"BadRequestError","param":null,"code":400}`},
			wantStatus: 400, retryable: false, attempts: 1, wantText: "maximum context length",
		},
		{
			name:       "404 html",
			reply:      reply{status: 404, header: map[string]string{"Content-Type": "text/html"}, body: `<html>not found</html>`},
			wantStatus: 404, retryable: false, attempts: 1, wantText: "not found",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFakeServer(t, tt.reply)
			m := f.model(t, Config{Stream: tt.stream})
			_, err := m.Generate(context.Background(), model.Request{Messages: []model.Message{{Role: model.RoleUser, Content: "hi"}}})
			t.Logf("error: %v", err)
			var me *model.Error
			if !errors.As(err, &me) {
				t.Fatalf("error %v (%T) is not a *model.Error", err, err)
			}
			if me.Provider != "openai" || me.Status != tt.wantStatus || me.Retryable != tt.retryable {
				t.Errorf("error = %+v, want status %d retryable %v", me, tt.wantStatus, tt.retryable)
			}
			if n := len(f.requests()); n != tt.attempts {
				t.Errorf("%d requests, want %d", n, tt.attempts)
			}
			if !strings.Contains(err.Error(), tt.wantText) {
				t.Errorf("error %q does not contain %q", err, tt.wantText)
			}
			if strings.Contains(err.Error(), testKey) || strings.Contains(fmt.Sprintf("%+v %#v", err, me), testKey) {
				t.Errorf("error leaks the key: %v", err)
			}
		})
	}
}

func TestMaxRetries(t *testing.T) {
	f := newFakeServer(t, reply{status: 429, header: fast, body: `{"error":{"message":"slow down"}}`})
	m := f.model(t, Config{MaxRetries: -1})
	_, err := m.Generate(context.Background(), model.Request{Messages: []model.Message{{Role: model.RoleUser, Content: "hi"}}})
	var me *model.Error
	if !errors.As(err, &me) || me.Status != 429 || !me.Retryable {
		t.Fatalf("err = %v, want retryable 429", err)
	}
	if n := len(f.requests()); n != 1 {
		t.Errorf("%d requests with retries disabled, want 1", n)
	}
}

func TestTransportError(t *testing.T) {
	srv := httptest.NewServer(http.NotFoundHandler())
	url := srv.URL
	srv.Close()
	m, err := New(Config{BaseURL: url + "/v1", APIKey: testKey, Model: "m", MaxRetries: -1})
	if err != nil {
		t.Fatal(err)
	}
	_, err = m.Generate(context.Background(), model.Request{Messages: []model.Message{{Role: model.RoleUser, Content: "hi"}}})
	var me *model.Error
	if !errors.As(err, &me) || me.Status != 0 || !me.Retryable {
		t.Fatalf("err = %v, want retryable transport *model.Error", err)
	}
	if strings.Contains(err.Error(), testKey) {
		t.Errorf("error leaks the key: %v", err)
	}
}

func TestLegacyMaxTokensAndNoKey(t *testing.T) {
	t.Setenv("OPENAI_API_KEY", "")
	f := newFakeServer(t, reply{status: 200, body: okBody})
	m, err := New(Config{BaseURL: f.srv.URL + "/v1", Model: "local", MaxTokens: 64, LegacyMaxTokens: true})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := m.Generate(context.Background(), model.Request{Messages: []model.Message{{Role: model.RoleUser, Content: "hi"}}}); err != nil {
		t.Fatalf("Generate: %v", err)
	}
	r := f.requests()[0]
	if got := r.header.Get("Authorization"); got != "" {
		t.Errorf("Authorization = %q with no key, want none", got)
	}
	var body map[string]json.RawMessage
	if err := json.Unmarshal(r.body, &body); err != nil {
		t.Fatal(err)
	}
	jsonEqual(t, "max_tokens", body["max_tokens"], `64`)
	if _, ok := body["max_completion_tokens"]; ok {
		t.Errorf("max_completion_tokens sent with LegacyMaxTokens")
	}
}

func TestAPIKeyFromEnv(t *testing.T) {
	t.Setenv("OPENAI_API_KEY", testKey)
	f := newFakeServer(t, reply{status: 200, body: okBody})
	m, err := New(Config{BaseURL: f.srv.URL + "/v1", Model: "m"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := m.Generate(context.Background(), model.Request{Messages: []model.Message{{Role: model.RoleUser, Content: "hi"}}}); err != nil {
		t.Fatalf("Generate: %v", err)
	}
	if got := f.requests()[0].header.Get("Authorization"); got != "Bearer "+testKey {
		t.Errorf("Authorization = %q, want key from $OPENAI_API_KEY", got)
	}
}

func TestNewValidates(t *testing.T) {
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
