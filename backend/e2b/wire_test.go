package e2b

import (
	"bytes"
	"encoding/hex"
	"encoding/json"
	"errors"
	"io"
	"strings"
	"testing"

	"github.com/wardenhq/warden/backend"
)

func TestEnvelopeFraming(t *testing.T) {
	t.Parallel()
	// The spec's example request for `echo hi`.
	msg := `{"process":{"cmd":"/bin/bash","args":["-l","-c","echo hi"]},"stdin":false}`
	var buf bytes.Buffer
	writeEnvelope(&buf, 0, []byte(msg))
	if got := hex.EncodeToString(buf.Bytes()[:5]); got != "000000004a" {
		t.Errorf("header %s, want 000000004a", got)
	}
	var req startRequest
	req.Process = processConfig{Cmd: "/bin/bash", Args: []string{"-l", "-c", "echo hi"}}
	b, _ := json.Marshal(req)
	if string(b) != msg {
		t.Errorf("start request %s, want %s", b, msg)
	}
	flags, payload, err := readEnvelope(&buf)
	if err != nil || flags != 0 || string(payload) != msg {
		t.Errorf("read back %d %q %v", flags, payload, err)
	}
	if _, _, err := readEnvelope(&buf); !errors.Is(err, io.EOF) {
		t.Errorf("at end: %v, want io.EOF", err)
	}
	for name, raw := range map[string][]byte{
		"short header":  {0, 0, 0},
		"short payload": append([]byte{0, 0, 0, 0, 9}, "{}"...),
		"compressed":    append([]byte{1, 0, 0, 0, 2}, "{}"...),
		"huge":          {0, 0xff, 0xff, 0xff, 0xff},
	} {
		if _, _, err := readEnvelope(bytes.NewReader(raw)); err == nil || errors.Is(err, io.EOF) {
			t.Errorf("%s: err %v", name, err)
		}
	}
}

// stream builds a response body from (flags, json) pairs.
func stream(frames ...any) *bytes.Buffer {
	var buf bytes.Buffer
	for i := 0; i < len(frames); i += 2 {
		writeEnvelope(&buf, frames[i].(byte), []byte(frames[i+1].(string)))
	}
	return &buf
}

func TestReadStreamTrailers(t *testing.T) {
	t.Parallel()
	var got []string
	collect := func(m []byte) error { got = append(got, string(m)); return nil }
	body := stream(byte(0), `{"event":{"start":{"pid":312}}}`, byte(0), `{"event":{"data":{"stdout":"aGkK"}}}`, byte(2), `{}`)
	if err := readStream("p", body, collect); err != nil || len(got) != 2 {
		t.Errorf("ok stream: %v %q", err, got)
	}
	body = stream(byte(0), `{"event":{"start":{"pid":1}}}`, byte(2), `{"error":{"code":"deadline_exceeded","message":"context deadline exceeded"},"metadata":{"x":["y"]}}`)
	err := readStream("process.Process/Start", body, collect)
	var rpcErr *RPCError
	if !errors.As(err, &rpcErr) || rpcErr.Code != "deadline_exceeded" || rpcErr.Message != "context deadline exceeded" || rpcErr.StatusCode != 200 {
		t.Errorf("trailer error: %v", err)
	}
	body = stream(byte(2), `{"error":{"code":"not_found","message":"gone"}}`)
	if err := readStream("p", body, collect); !errors.Is(err, backend.ErrNotExist) {
		t.Errorf("not_found trailer: %v, want ErrNotExist", err)
	}
	body = stream(byte(0), `{"event":{"keepalive":{}}}`)
	if err := readStream("p", body, collect); !errors.Is(err, io.ErrUnexpectedEOF) {
		t.Errorf("missing end of stream: %v", err)
	}
}

func TestProcessEventDecoding(t *testing.T) {
	t.Parallel()
	var m struct {
		Event processEvent `json:"event"`
	}
	if err := json.Unmarshal([]byte(`{"event":{"end":{"exited":true,"status":"exit status 0"}}}`), &m); err != nil || m.Event.End == nil || m.Event.End.ExitCode != 0 || !m.Event.End.Exited {
		t.Errorf("omitted exitCode: %+v %v", m.Event.End, err)
	}
	m.Event = processEvent{}
	if err := json.Unmarshal([]byte(`{"event":{"end":{"exitCode":3,"exited":true,"status":"exit status 3","error":"exit status 3"}}}`), &m); err != nil || m.Event.End.ExitCode != 3 {
		t.Errorf("exit 3: %+v %v", m.Event.End, err)
	}
	m.Event = processEvent{}
	if err := json.Unmarshal([]byte(`{"event":{"data":{"stderr":"AP8="}}}`), &m); err != nil || string(m.Event.Data.Stderr) != "\x00\xff" {
		t.Errorf("base64 data: %+v %v", m.Event.Data, err)
	}
}

func TestInt64AsString(t *testing.T) {
	t.Parallel()
	var e entryInfo
	raw := `{"name":".bashrc","type":"FILE_TYPE_FILE","path":"/home/user/.bashrc","size":"9007199254740993","mode":420,"permissions":"-rw-r--r--","owner":"user","group":"user","modifiedTime":"2025-01-02T03:04:05.123456789Z"}`
	if err := json.Unmarshal([]byte(raw), &e); err != nil {
		t.Fatal(err)
	}
	// 2^53+1 does not survive a float64: it must be parsed from the string.
	if e.Size != 9007199254740993 || e.Mode != 0o644 || e.ModifiedTime.Nanosecond() != 123456789 {
		t.Errorf("decoded %+v", e)
	}
	fi := fileInfo(e)
	if fi.Size != 9007199254740993 || fi.Name != ".bashrc" || fi.IsDir {
		t.Errorf("FileInfo %+v", fi)
	}
	var n int64String
	for in, want := range map[string]int64{`"-5"`: -5, `12`: 12} {
		if err := json.Unmarshal([]byte(in), &n); err != nil || int64(n) != want {
			t.Errorf("%s: %d %v", in, n, err)
		}
	}
	if err := json.Unmarshal([]byte(`"1.5"`), &n); err == nil {
		t.Error("accepted 1.5")
	}
	if b, _ := json.Marshal(int64String(1 << 40)); string(b) != `"1099511627776"` {
		t.Errorf("marshal %s", b)
	}
}

func TestErrorBodies(t *testing.T) {
	t.Parallel()
	cases := []struct {
		status int
		body   string
		code   string
		is     error
	}{
		{404, `{"code":"not_found","message":"file not found: x"}`, "not_found", backend.ErrNotExist},
		{401, `{"code":401,"message":"unauthorized access"}`, "unauthenticated", ErrAuth},
		{502, `{"sandboxId":"abc","message":"The sandbox was not found","code":502}`, "unavailable", ErrUnavailable},
		{429, `{"code":"resource_exhausted","message":"slow down"}`, "resource_exhausted", ErrQuota},
		{500, `<html>oops</html>`, "unknown", nil},
	}
	for _, c := range cases {
		e := rpcErrorFrom("x", c.status, []byte(c.body))
		if e.Code != c.code || (c.is != nil && !errors.Is(e, c.is)) {
			t.Errorf("%d %s: %+v", c.status, c.body, e)
		}
	}
	e := apiErrorFrom("create sandbox", 403, []byte(`{"code":403,"message":"team is blocked"}`))
	if !errors.Is(e, ErrAuth) || !strings.Contains(e.Error(), "team is blocked") {
		t.Errorf("api 403: %v", e)
	}
}
