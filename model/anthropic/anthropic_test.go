package anthropic

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

const testKey = "sk-ant-test-7c41e09b3a"

// reply is one canned HTTP answer of the fake server.
type reply struct {
	status int
	header map[string]string
	body   string
}

// fakeServer speaks the Messages API wire format from canned replies
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
	cfg.BaseURL = f.srv.URL
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
func sse(events ...event) reply {
	var b strings.Builder
	for _, e := range events {
		fmt.Fprintf(&b, "event: %s\ndata: %s\n\n", e.typ, e.data)
	}
	return reply{status: 200, header: map[string]string{"Content-Type": "text/event-stream"}, body: b.String()}
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
	if r.method != http.MethodPost || r.path != "/v1/messages" {
		t.Errorf("request = %s %s, want POST /v1/messages", r.method, r.path)
	}
	authHeader := ""
	switch {
	case r.header.Get("X-Api-Key") == testKey:
		authHeader = "X-Api-Key"
	case r.header.Get("Authorization") == "Bearer "+testKey:
		authHeader = "Authorization"
	default:
		t.Errorf("no auth header carries the key: %v", r.header)
	}
	if r.header.Get("Anthropic-Version") == "" {
		t.Errorf("anthropic-version header missing")
	}
	for k, vs := range r.header {
		if strings.EqualFold(k, authHeader) {
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
	jsonEqual(t, "model", body["model"], `"claude-test"`)
	jsonEqual(t, "max_tokens", body["max_tokens"], `4096`)
	jsonEqual(t, "system", body["system"], `[{"type":"text","text":"You are a careful agent."}]`)
	jsonEqual(t, "messages", body["messages"], wantMessages)
	jsonEqual(t, "tools", body["tools"], wantTools)
	return body
}

// wantResponse is what both modes must parse.
var wantResponse = model.Response{
	Text: "Reading two files.",
	ToolCalls: []model.ToolCall{
		{ID: "toolu_a", Name: "Read", Input: json.RawMessage(`{"path":"go.mod"}`)},
		{ID: "toolu_b", Name: "Bash", Input: json.RawMessage(`{"command":"cat README.md"}`)},
	},
	// 100 uncached + 20 cache-read input tokens.
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

func TestGenerate(t *testing.T) {
	f := newFakeServer(t, reply{status: 200, body: `{
  "id": "msg_01", "type": "message", "role": "assistant", "model": "claude-test",
  "content": [
    {"type": "text", "text": "Reading "},
    {"type": "text", "text": "two files."},
    {"type": "tool_use", "id": "toolu_a", "name": "Read", "input": {"path": "go.mod"}},
    {"type": "tool_use", "id": "toolu_b", "name": "Bash", "input": {"command": "cat README.md"}}
  ],
  "stop_reason": "tool_use", "stop_sequence": null,
  "usage": {"input_tokens": 100, "output_tokens": 34, "cache_creation_input_tokens": 0, "cache_read_input_tokens": 20}
}`})
	m := f.model(t, Config{})
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
	if s, ok := body["stream"]; ok && string(s) != "false" {
		t.Errorf("stream = %s on a non-streamed request", s)
	}
}

func TestGenerateStream(t *testing.T) {
	f := newFakeServer(t, sse(
		event{"message_start", `{"type":"message_start","message":{"id":"msg_02","type":"message","role":"assistant","model":"claude-test","content":[],"stop_reason":null,"stop_sequence":null,"usage":{"input_tokens":100,"cache_creation_input_tokens":0,"cache_read_input_tokens":20,"output_tokens":1}}}`},
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
	m := f.model(t, Config{Stream: true})
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
}

const okBody = `{"id":"msg_ok","type":"message","role":"assistant","model":"claude-test",
 "content":[{"type":"text","text":"done"}],"stop_reason":"end_turn","stop_sequence":null,
 "usage":{"input_tokens":3,"output_tokens":1}}`

// okStream is a minimal streamed answer "done".
func okStream() reply {
	return sse(
		event{"message_start", `{"type":"message_start","message":{"id":"msg_ok","type":"message","role":"assistant","model":"claude-test","content":[],"stop_reason":null,"stop_sequence":null,"usage":{"input_tokens":3,"output_tokens":1}}}`},
		event{"content_block_start", `{"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}`},
		event{"content_block_delta", `{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"done"}}`},
		event{"content_block_stop", `{"type":"content_block_stop","index":0}`},
		event{"message_delta", `{"type":"message_delta","delta":{"stop_reason":"end_turn","stop_sequence":null},"usage":{"output_tokens":1}}`},
		event{"message_stop", `{"type":"message_stop"}`},
	)
}

// fast makes the SDK retry at once.
var fast = map[string]string{"Retry-After-Ms": "1"}

func hello() model.Request {
	return model.Request{Messages: []model.Message{{Role: model.RoleUser, Content: "hi"}}}
}

func TestRetryThenSuccess(t *testing.T) {
	for _, stream := range []bool{false, true} {
		t.Run(fmt.Sprintf("stream=%v", stream), func(t *testing.T) {
			ok := reply{status: 200, body: okBody}
			if stream {
				ok = okStream()
			}
			f := newFakeServer(t,
				reply{status: 429, header: fast, body: `{"type":"error","error":{"type":"rate_limit_error","message":"Number of request tokens has exceeded your rate limit"}}`},
				ok)
			m := f.model(t, Config{Stream: stream})
			got, err := m.Generate(context.Background(), hello())
			if err != nil {
				t.Fatalf("Generate: %v", err)
			}
			if got.Text != "done" || got.Usage != (model.Usage{InputTokens: 3, OutputTokens: 1}) {
				t.Errorf("response = %+v, want text done, usage 3/1", got)
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
			reply:      reply{status: 401, header: fast, body: `{"type":"error","error":{"type":"authentication_error","message":"invalid x-api-key ` + testKey + `"}}`},
			wantStatus: 401, retryable: false, attempts: 1, wantText: "authentication_error: invalid x-api-key",
		},
		{
			name:       "401 streamed",
			stream:     true,
			reply:      reply{status: 401, header: fast, body: `{"type":"error","error":{"type":"authentication_error","message":"invalid key"}}`},
			wantStatus: 401, retryable: false, attempts: 1, wantText: "invalid key",
		},
		{
			name:       "400 not retried",
			reply:      reply{status: 400, header: fast, body: `{"type":"error","error":{"type":"invalid_request_error","message":"messages: roles must alternate"}}`},
			wantStatus: 400, retryable: false, attempts: 1, wantText: "roles must alternate",
		},
		{
			name:       "500 after retries",
			reply:      reply{status: 500, header: fast, body: `{"type":"error","error":{"type":"api_error","message":"Internal server error"}}`},
			wantStatus: 500, retryable: true, attempts: 3, wantText: "Internal server error",
		},
		{
			name:       "529 streamed after retries",
			stream:     true,
			reply:      reply{status: 529, header: fast, body: `{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}`},
			wantStatus: 529, retryable: true, attempts: 3, wantText: "overloaded_error",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFakeServer(t, tt.reply)
			m := f.model(t, Config{Stream: tt.stream})
			_, err := m.Generate(context.Background(), hello())
			t.Logf("error: %v", err)
			var me *model.Error
			if !errors.As(err, &me) {
				t.Fatalf("error %v (%T) is not a *model.Error", err, err)
			}
			if me.Provider != "anthropic" || me.Status != tt.wantStatus || me.Retryable != tt.retryable {
				t.Errorf("error = %+v, want status %d retryable %v", me, tt.wantStatus, tt.retryable)
			}
			if n := len(f.requests()); n != tt.attempts {
				t.Errorf("%d requests, want %d", n, tt.attempts)
			}
			if !strings.Contains(err.Error(), tt.wantText) {
				t.Errorf("error %q does not contain %q", err, tt.wantText)
			}
			if strings.Contains(fmt.Sprintf("%v %+v %#v", err, err, me), testKey) {
				t.Errorf("error leaks the key: %v", err)
			}
		})
	}
}

func TestStreamErrorEvent(t *testing.T) {
	// An error event after a 200 (overload mid-stream) is retryable but
	// has no HTTP status.
	f := newFakeServer(t, sse(
		event{"message_start", `{"type":"message_start","message":{"id":"msg_e","type":"message","role":"assistant","model":"claude-test","content":[],"stop_reason":null,"stop_sequence":null,"usage":{"input_tokens":3,"output_tokens":1}}}`},
		event{"error", `{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}`},
	))
	m := f.model(t, Config{Stream: true})
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
	f := newFakeServer(t, reply{status: 429, header: fast, body: `{"type":"error","error":{"type":"rate_limit_error","message":"slow down"}}`})
	m := f.model(t, Config{MaxRetries: -1, MaxTokens: 100})
	_, err := m.Generate(context.Background(), hello())
	var me *model.Error
	if !errors.As(err, &me) || me.Status != 429 || !me.Retryable {
		t.Fatalf("err = %v, want retryable 429", err)
	}
	reqs := f.requests()
	if len(reqs) != 1 {
		t.Errorf("%d requests with retries disabled, want 1", len(reqs))
	}
	var body map[string]json.RawMessage
	if err := json.Unmarshal(reqs[0].body, &body); err != nil {
		t.Fatal(err)
	}
	jsonEqual(t, "max_tokens", body["max_tokens"], `100`)
}

func TestTransportError(t *testing.T) {
	srv := httptest.NewServer(http.NotFoundHandler())
	url := srv.URL
	srv.Close()
	m, err := New(Config{BaseURL: url, APIKey: testKey, Model: "m", MaxRetries: -1})
	if err != nil {
		t.Fatal(err)
	}
	_, err = m.Generate(context.Background(), hello())
	var me *model.Error
	if !errors.As(err, &me) || me.Status != 0 || !me.Retryable {
		t.Fatalf("err = %v, want retryable transport *model.Error", err)
	}
	if strings.Contains(err.Error(), testKey) {
		t.Errorf("error leaks the key: %v", err)
	}
}

func TestAPIKeyFromEnv(t *testing.T) {
	t.Setenv("ANTHROPIC_API_KEY", testKey)
	f := newFakeServer(t, reply{status: 200, body: okBody})
	m, err := New(Config{BaseURL: f.srv.URL, Model: "m"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := m.Generate(context.Background(), hello()); err != nil {
		t.Fatalf("Generate: %v", err)
	}
	h := f.requests()[0].header
	if h.Get("X-Api-Key") != testKey && h.Get("Authorization") != "Bearer "+testKey {
		t.Errorf("key from $ANTHROPIC_API_KEY not sent: %v", h)
	}
}

func TestSystemMessagesAndEmptyToolResult(t *testing.T) {
	f := newFakeServer(t, reply{status: 200, body: okBody})
	m := f.model(t, Config{})
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
	if err := json.Unmarshal(f.requests()[0].body, &body); err != nil {
		t.Fatal(err)
	}
	jsonEqual(t, "system", body["system"], `[{"type":"text","text":"Be brief."}]`)
	jsonEqual(t, "messages", body["messages"], `[
 {"role":"user","content":[{"type":"text","text":"run it"}]},
 {"role":"assistant","content":[{"type":"tool_use","id":"t1","name":"Bash","input":{}}]},
 {"role":"user","content":[{"type":"tool_result","tool_use_id":"t1"}]}
]`)
}

func TestNewValidates(t *testing.T) {
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
