package e2b

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// Connect envelope flags.
const (
	flagCompressed = 0x01
	flagEndStream  = 0x02
	// maxEnvelope bounds one received message.
	maxEnvelope = 32 << 20
)

// writeEnvelope appends one Connect envelope: flags, big-endian uint32
// length, payload.
func writeEnvelope(buf *bytes.Buffer, flags byte, payload []byte) {
	var hdr [5]byte
	hdr[0] = flags
	binary.BigEndian.PutUint32(hdr[1:], uint32(len(payload)))
	buf.Write(hdr[:])
	buf.Write(payload)
}

// readEnvelope reads one Connect envelope. It returns io.EOF only at a
// clean message boundary.
func readEnvelope(r io.Reader) (flags byte, payload []byte, err error) {
	var hdr [5]byte
	if _, err := io.ReadFull(r, hdr[:]); err != nil {
		if errors.Is(err, io.ErrUnexpectedEOF) {
			return 0, nil, fmt.Errorf("truncated envelope header: %w", err)
		}
		return 0, nil, err
	}
	n := binary.BigEndian.Uint32(hdr[1:])
	if n > maxEnvelope {
		return 0, nil, fmt.Errorf("envelope of %d bytes exceeds %d", n, maxEnvelope)
	}
	if hdr[0]&flagCompressed != 0 {
		return 0, nil, errors.New("compressed envelope received but identity encoding was requested")
	}
	payload = make([]byte, n)
	if _, err := io.ReadFull(r, payload); err != nil {
		return 0, nil, fmt.Errorf("truncated envelope payload: %w", io.ErrUnexpectedEOF)
	}
	return hdr[0], payload, nil
}

// endStream is the payload of the final (flags 0x02) envelope.
type endStream struct {
	Error *struct {
		Code    string `json:"code"`
		Message string `json:"message"`
	} `json:"error"`
	Metadata map[string][]string `json:"metadata"`
}

// int64String decodes a protojson int64, which is a quoted string; a bare
// number is accepted too.
type int64String int64

// UnmarshalJSON implements json.Unmarshaler.
func (n *int64String) UnmarshalJSON(b []byte) error {
	s := string(b)
	if len(s) >= 2 && s[0] == '"' {
		if err := json.Unmarshal(b, &s); err != nil {
			return err
		}
	}
	v, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		return fmt.Errorf("int64 %s: %w", b, err)
	}
	*n = int64String(v)
	return nil
}

// MarshalJSON implements json.Marshaler, writing the protojson form.
func (n int64String) MarshalJSON() ([]byte, error) {
	return []byte(`"` + strconv.FormatInt(int64(n), 10) + `"`), nil
}

// entryInfo is filesystem.EntryInfo in protojson.
type entryInfo struct {
	Name          string      `json:"name"`
	Type          string      `json:"type"`
	Path          string      `json:"path"`
	Size          int64String `json:"size"`
	Mode          uint32      `json:"mode"`
	Permissions   string      `json:"permissions"`
	Owner         string      `json:"owner"`
	Group         string      `json:"group"`
	ModifiedTime  time.Time   `json:"modifiedTime"`
	SymlinkTarget string      `json:"symlinkTarget"`
}

// processEvent is process.ProcessEvent, a oneof.
type processEvent struct {
	Start *struct {
		Pid uint32 `json:"pid"`
	} `json:"start"`
	Data *struct {
		Stdout []byte `json:"stdout"`
		Stderr []byte `json:"stderr"`
		Pty    []byte `json:"pty"`
	} `json:"data"`
	End *struct {
		ExitCode int32  `json:"exitCode"`
		Exited   bool   `json:"exited"`
		Status   string `json:"status"`
		Error    string `json:"error"`
	} `json:"end"`
	Keepalive *struct{} `json:"keepalive"`
}

// startRequest is process.StartRequest. Stdin is a plain bool (never
// omitted): an absent field makes envd keep a stdin pipe open.
type startRequest struct {
	Process processConfig `json:"process"`
	Stdin   bool          `json:"stdin"`
}

type processConfig struct {
	Cmd  string            `json:"cmd"`
	Args []string          `json:"args,omitempty"`
	Envs map[string]string `json:"envs,omitempty"`
	Cwd  string            `json:"cwd,omitempty"`
}

// envd talks to one sandbox's envd.
type envd struct {
	*api
	sandboxID string
	token     string
	baseURL   string
}

func (e *envd) newRequest(ctx context.Context, method, path string, body []byte) (*http.Request, error) {
	var r io.Reader
	if body != nil {
		r = bytes.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, method, e.baseURL+path, r)
	if err != nil {
		return nil, err
	}
	req.Header.Set("E2b-Sandbox-Id", e.sandboxID)
	req.Header.Set("E2b-Sandbox-Port", strconv.Itoa(EnvdPort))
	if e.token != "" {
		req.Header.Set("X-Access-Token", e.token)
	}
	req.Header.Set("User-Agent", "warden-e2b")
	return req, nil
}

func (e *envd) basicAuth() string {
	return "Basic " + base64.StdEncoding.EncodeToString([]byte(e.cfg.User+":"))
}

// unary calls a unary Connect procedure with JSON in and out.
func (e *envd) unary(ctx context.Context, procedure string, in, out any) error {
	body, err := json.Marshal(in)
	if err != nil {
		return fmt.Errorf("e2b envd %s: %w", procedure, err)
	}
	resp, err := e.send(ctx, true, func() (*http.Request, error) {
		req, err := e.newRequest(ctx, http.MethodPost, "/"+procedure, body)
		if err != nil {
			return nil, err
		}
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Connect-Protocol-Version", "1")
		req.Header.Set("Authorization", e.basicAuth())
		return req, nil
	})
	if err != nil {
		return fmt.Errorf("e2b envd %s: %w", procedure, err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, maxEnvelope))
	if err != nil {
		return fmt.Errorf("e2b envd %s: read: %w", procedure, err)
	}
	if resp.StatusCode != http.StatusOK {
		return rpcErrorFrom(procedure, resp.StatusCode, data)
	}
	if out != nil {
		if err := json.Unmarshal(data, out); err != nil {
			return fmt.Errorf("e2b envd %s: decode: %w", procedure, err)
		}
	}
	return nil
}

// stream opens a server-streaming call and returns the response body
// positioned at the first envelope. timeout, when positive, is sent as
// Connect-Timeout-Ms (envd uses it as the process lifetime).
func (e *envd) stream(ctx context.Context, procedure string, in any, timeout time.Duration) (io.ReadCloser, error) {
	msg, err := json.Marshal(in)
	if err != nil {
		return nil, fmt.Errorf("e2b envd %s: %w", procedure, err)
	}
	var body bytes.Buffer
	writeEnvelope(&body, 0, msg)
	// Not idempotent: a stream may start a process, and a non-200 answer
	// from the proxy (502, 504) does not prove envd did not start it.
	resp, err := e.send(ctx, false, func() (*http.Request, error) {
		req, err := e.newRequest(ctx, http.MethodPost, "/"+procedure, body.Bytes())
		if err != nil {
			return nil, err
		}
		req.Header.Set("Content-Type", "application/connect+json")
		req.Header.Set("Connect-Protocol-Version", "1")
		req.Header.Set("Connect-Content-Encoding", "identity")
		req.Header.Set("Connect-Accept-Encoding", "identity")
		req.Header.Set("Keepalive-Ping-Interval", "50")
		req.Header.Set("Authorization", e.basicAuth())
		if timeout > 0 {
			req.Header.Set("Connect-Timeout-Ms", strconv.FormatInt(max(timeout.Milliseconds(), 1), 10))
		}
		return req, nil
	})
	if err != nil {
		return nil, fmt.Errorf("e2b envd %s: %w", procedure, err)
	}
	if resp.StatusCode != http.StatusOK {
		defer resp.Body.Close()
		data, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
		rpcErr := rpcErrorFrom(procedure, resp.StatusCode, data)
		if mayHaveTakenEffect(resp.StatusCode) {
			return nil, unknownOutcome(rpcErr)
		}
		return nil, rpcErr
	}
	if ct := resp.Header.Get("Content-Type"); !strings.HasPrefix(ct, "application/connect+json") {
		resp.Body.Close()
		return nil, fmt.Errorf("e2b envd %s: unexpected content type %q", procedure, ct)
	}
	return resp.Body, nil
}

// readStream reads data envelopes, passing each payload to onMsg, until
// the end-of-stream envelope, whose error (if any) is returned as an
// *RPCError.
func readStream(procedure string, r io.Reader, onMsg func([]byte) error) error {
	for {
		flags, payload, err := readEnvelope(r)
		if err != nil {
			if errors.Is(err, io.EOF) {
				return fmt.Errorf("e2b envd %s: stream ended without end-of-stream message: %w", procedure, io.ErrUnexpectedEOF)
			}
			return fmt.Errorf("e2b envd %s: %w", procedure, err)
		}
		if flags&flagEndStream != 0 {
			var end endStream
			if err := json.Unmarshal(payload, &end); err != nil {
				return fmt.Errorf("e2b envd %s: decode end of stream: %w", procedure, err)
			}
			if end.Error != nil {
				return &RPCError{Procedure: procedure, Code: end.Error.Code, Message: end.Error.Message, StatusCode: http.StatusOK}
			}
			return nil
		}
		if err := onMsg(payload); err != nil {
			return err
		}
	}
}

// download fetches a file with GET /files.
func (e *envd) download(ctx context.Context, path string) ([]byte, error) {
	q := "path=" + queryEscape(path) + "&username=" + queryEscape(e.cfg.User)
	resp, err := e.send(ctx, true, func() (*http.Request, error) {
		return e.newRequest(ctx, http.MethodGet, "/files?"+q, nil)
	})
	if err != nil {
		return nil, fmt.Errorf("e2b read %s: %w", path, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		data, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
		return nil, rpcErrorFrom("/files", resp.StatusCode, data)
	}
	data, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, fmt.Errorf("e2b read %s: %w", path, err)
	}
	return data, nil
}

// upload writes a file with a multipart POST /files (every envd version
// accepts it); envd creates parent directories.
func (e *envd) upload(ctx context.Context, path string, data []byte) error {
	var body bytes.Buffer
	mw := newMultipart(&body)
	if err := mw.file("file", path, data); err != nil {
		return fmt.Errorf("e2b write %s: %w", path, err)
	}
	q := "path=" + queryEscape(path) + "&username=" + queryEscape(e.cfg.User)
	resp, err := e.send(ctx, true, func() (*http.Request, error) {
		req, err := e.newRequest(ctx, http.MethodPost, "/files?"+q, body.Bytes())
		if err != nil {
			return nil, err
		}
		req.Header.Set("Content-Type", mw.contentType())
		return req, nil
	})
	if err != nil {
		return fmt.Errorf("e2b write %s: %w", path, err)
	}
	defer resp.Body.Close()
	answer, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if resp.StatusCode != http.StatusOK {
		return rpcErrorFrom("/files", resp.StatusCode, answer)
	}
	var infos []struct {
		Path string `json:"path"`
	}
	if err := json.Unmarshal(answer, &infos); err != nil || len(infos) == 0 {
		return fmt.Errorf("e2b write %s: unexpected answer %q", path, truncate(string(answer), 200))
	}
	return nil
}
