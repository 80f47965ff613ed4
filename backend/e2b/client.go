package e2b

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"net/url"
	"os"
	"strconv"
	"strings"
	"time"
)

// Defaults applied by New to zero Config fields.
const (
	DefaultDomain   = "e2b.app"
	DefaultTemplate = "base"
	DefaultTimeout  = 300 * time.Second
	DefaultWorkdir  = "/home/user/workspace"
	DefaultUser     = "user"
	// EnvdPort is the port envd listens on inside a sandbox.
	EnvdPort = 49983
	// WorkspaceMetadataKey is the sandbox metadata key holding
	// Config.WorkspaceID; New reconnects to a sandbox carrying it.
	WorkspaceMetadataKey = "warden.workspace.id"
)

// Config configures a Backend. The zero value (plus E2B_API_KEY in the
// environment) creates a sandbox from the "base" template on e2b.app.
type Config struct {
	// APIKey authenticates with the control plane (X-API-Key). Empty means
	// the E2B_API_KEY environment variable. It is never logged or put in
	// errors.
	APIKey string
	// Domain is the E2B domain; empty means E2B_DOMAIN or "e2b.app".
	Domain string
	// APIURL is the control-plane base URL; empty means E2B_API_URL or
	// https://api.<Domain>.
	APIURL string
	// SandboxURL, when set, is the envd base URL for every sandbox
	// (self-hosted proxies, debug setups, e2bfake); requests are routed by
	// the E2b-Sandbox-Id/E2b-Sandbox-Port headers. Empty means
	// E2B_SANDBOX_URL or https://49983-<sandboxID>.<domain>.
	SandboxURL string
	// Template is the sandbox template; empty means "base".
	Template string
	// Timeout is the sandbox keep-alive: it is killed this long after
	// creation, reconnection or the last SetTimeout. Zero means 300 s.
	Timeout time.Duration
	// Workdir is the default working directory for Exec; New creates it.
	// Empty means /home/user/workspace.
	Workdir string
	// User is the sandbox user processes and files belong to; empty means
	// "user".
	User string
	// WorkspaceID, when set, is stored in the sandbox metadata under
	// WorkspaceMetadataKey, and New first reconnects (resuming if paused)
	// to a sandbox already carrying it.
	WorkspaceID string
	// SandboxID, when set, makes New connect to that sandbox instead of
	// looking one up or creating one.
	SandboxID string
	// Metadata is extra sandbox metadata set on creation.
	Metadata map[string]string
	// EnvVars are environment variables set for the whole sandbox.
	EnvVars map[string]string
	// ExecEnv holds resolved backend.env entries (NAME=value, see
	// backend.ResolveEnv) added to the environment of every process
	// warden starts, also in a sandbox it reconnects to. The worker's own
	// environment never reaches the sandbox: a process sees the
	// sandbox's environment, EnvVars, ExecEnv, the call's trace context
	// (TRACEPARENT, TRACESTATE: backend.TraceEnv) and the request's entries.
	ExecEnv []string
	// HTTPClient sends every request; nil means a client without an
	// overall timeout (streams can be long; contexts bound calls).
	HTTPClient *http.Client
	// MaxRetries bounds retries of idempotent requests answered 429/5xx
	// or failing at the transport. Requests that are not idempotent
	// (sandbox creation, process start) are never retried, see
	// ErrOutcomeUnknown. Zero means 4; negative disables retries.
	MaxRetries int
	// RetryBackoff is the first retry delay, doubled on each attempt
	// (capped at 10 s) unless the server sends Retry-After. Zero means
	// 250 ms.
	RetryBackoff time.Duration
}

func (c *Config) setDefaults() {
	if c.APIKey == "" {
		c.APIKey = os.Getenv("E2B_API_KEY")
	}
	if c.Domain == "" {
		c.Domain = os.Getenv("E2B_DOMAIN")
	}
	if c.Domain == "" {
		c.Domain = DefaultDomain
	}
	if c.APIURL == "" {
		c.APIURL = os.Getenv("E2B_API_URL")
	}
	if c.APIURL == "" {
		c.APIURL = "https://api." + c.Domain
	}
	c.APIURL = strings.TrimRight(c.APIURL, "/")
	if c.SandboxURL == "" {
		c.SandboxURL = os.Getenv("E2B_SANDBOX_URL")
	}
	c.SandboxURL = strings.TrimRight(c.SandboxURL, "/")
	if c.Template == "" {
		c.Template = DefaultTemplate
	}
	if c.Timeout <= 0 {
		c.Timeout = DefaultTimeout
	}
	if c.Workdir == "" {
		c.Workdir = DefaultWorkdir
	}
	if c.User == "" {
		c.User = DefaultUser
	}
	if c.HTTPClient == nil {
		c.HTTPClient = &http.Client{}
	}
	if c.MaxRetries == 0 {
		c.MaxRetries = 4
	}
	if c.MaxRetries < 0 {
		c.MaxRetries = 0
	}
	if c.RetryBackoff <= 0 {
		c.RetryBackoff = 250 * time.Millisecond
	}
}

// SandboxInfo describes a sandbox as the control plane lists it.
type SandboxInfo struct {
	SandboxID  string            `json:"sandboxID"`
	TemplateID string            `json:"templateID"`
	Alias      string            `json:"alias,omitempty"`
	State      string            `json:"state,omitempty"`
	Metadata   map[string]string `json:"metadata,omitempty"`
	StartedAt  time.Time         `json:"startedAt"`
	EndAt      time.Time         `json:"endAt"`
}

// sandbox is the create/connect response.
type sandbox struct {
	TemplateID      string  `json:"templateID"`
	SandboxID       string  `json:"sandboxID"`
	ClientID        string  `json:"clientID"`
	EnvdVersion     string  `json:"envdVersion"`
	EnvdAccessToken string  `json:"envdAccessToken,omitempty"`
	Domain          *string `json:"domain"`
}

// api is the HTTP layer shared by control-plane and envd calls.
type api struct {
	cfg Config
}

// timeoutSeconds converts a keep-alive to the API's whole seconds,
// rounding up like the SDK.
func timeoutSeconds(d time.Duration) int32 {
	s := (d + time.Second - 1) / time.Second
	if s < 1 {
		s = 1
	}
	if s > 1<<31-1 {
		s = 1<<31 - 1
	}
	return int32(s)
}

func retryable(status int) bool {
	switch status {
	case http.StatusTooManyRequests, http.StatusInternalServerError, http.StatusBadGateway,
		http.StatusServiceUnavailable, http.StatusGatewayTimeout:
		return true
	}
	return false
}

// send performs a request built by newReq and returns the last response
// whatever its status.
//
// An idempotent request is retried with exponential backoff on retryable
// statuses and transport errors. A request that is not idempotent
// (sandbox creation, process start) is sent once: an answer, even a
// gateway's 502 or 504, does not prove the service did not act on it (the
// sandbox may exist, the process may be running), and a transport error
// may come after the request was written, so resending could create a
// second sandbox or run a side-effecting command twice. The caller turns
// a 5xx answer to such a request into an error wrapping
// ErrOutcomeUnknown (see unknownOutcome). The only resend left is the one
// net/http's Transport makes itself when it knows nothing was written on
// a reused connection.
func (a *api) send(ctx context.Context, idempotent bool, newReq func() (*http.Request, error)) (*http.Response, error) {
	for attempt := 0; ; attempt++ {
		req, err := newReq()
		if err != nil {
			return nil, err
		}
		resp, err := a.cfg.HTTPClient.Do(req)
		last := !idempotent || attempt >= a.cfg.MaxRetries
		if err != nil {
			if ctx.Err() != nil || last {
				return nil, err
			}
			if werr := a.wait(ctx, attempt, ""); werr != nil {
				return nil, werr
			}
			continue
		}
		if !retryable(resp.StatusCode) || last {
			return resp, nil
		}
		retryAfter := resp.Header.Get("Retry-After")
		_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
		resp.Body.Close()
		if werr := a.wait(ctx, attempt, retryAfter); werr != nil {
			return nil, werr
		}
	}
}

// wait sleeps before retry attempt+1.
func (a *api) wait(ctx context.Context, attempt int, retryAfter string) error {
	d := a.cfg.RetryBackoff << min(attempt, 10)
	if secs, err := strconv.Atoi(retryAfter); err == nil && secs >= 0 {
		d = time.Duration(secs) * time.Second
	}
	d = min(d, 10*time.Second)
	// Up to 20% jitter so that many workers do not retry in lockstep.
	d += time.Duration(rand.Int64N(int64(d)/5 + 1))
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

// control calls the control plane with a JSON body (nil for none) and
// decodes a JSON answer into out (nil to ignore it). It returns the
// success status.
func (a *api) control(ctx context.Context, op, method, path string, idempotent bool, in, out any, ok ...int) (int, error) {
	var body []byte
	if in != nil {
		var err error
		if body, err = json.Marshal(in); err != nil {
			return 0, fmt.Errorf("e2b %s: %w", op, err)
		}
	}
	resp, err := a.send(ctx, idempotent, func() (*http.Request, error) {
		var r io.Reader
		if body != nil {
			r = bytes.NewReader(body)
		}
		req, err := http.NewRequestWithContext(ctx, method, a.cfg.APIURL+path, r)
		if err != nil {
			return nil, err
		}
		req.Header.Set("X-API-Key", a.cfg.APIKey)
		req.Header.Set("Accept", "application/json")
		if body != nil {
			req.Header.Set("Content-Type", "application/json")
		}
		return req, nil
	})
	if err != nil {
		return 0, fmt.Errorf("e2b %s: %w", op, err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, 16<<20))
	if err != nil {
		return 0, fmt.Errorf("e2b %s: read response: %w", op, err)
	}
	success := false
	for _, s := range ok {
		success = success || resp.StatusCode == s
	}
	if !success {
		apiErr := apiErrorFrom(op, resp.StatusCode, data)
		if !idempotent && mayHaveTakenEffect(resp.StatusCode) && !errors.Is(apiErr, ErrQuota) {
			// A capacity refusal is the control plane's own answer: nothing
			// was created. Any other 5xx leaves the outcome open.
			return resp.StatusCode, unknownOutcome(apiErr)
		}
		return resp.StatusCode, apiErr
	}
	if out != nil {
		if err := json.Unmarshal(data, out); err != nil {
			return resp.StatusCode, fmt.Errorf("e2b %s: decode response: %w", op, err)
		}
	}
	return resp.StatusCode, nil
}

func (a *api) create(ctx context.Context, metadata map[string]string) (*sandbox, error) {
	in := map[string]any{
		"templateID":            a.cfg.Template,
		"timeout":               timeoutSeconds(a.cfg.Timeout),
		"secure":                true,
		"allow_internet_access": true,
	}
	if len(metadata) > 0 {
		in["metadata"] = metadata
	}
	if len(a.cfg.EnvVars) > 0 {
		in["envVars"] = a.cfg.EnvVars
	}
	var sb sandbox
	if _, err := a.control(ctx, "create sandbox", http.MethodPost, "/sandboxes", false, in, &sb, http.StatusCreated); err != nil {
		return nil, err
	}
	return &sb, nil
}

func (a *api) connect(ctx context.Context, id string) (*sandbox, error) {
	in := map[string]int32{"timeout": timeoutSeconds(a.cfg.Timeout)}
	var sb sandbox
	if _, err := a.control(ctx, "connect sandbox", http.MethodPost, "/sandboxes/"+url.PathEscape(id)+"/connect", true, in, &sb, http.StatusOK, http.StatusCreated); err != nil {
		return nil, err
	}
	return &sb, nil
}

// list returns running and paused sandboxes whose metadata includes every
// pair in metadata, following pagination.
func (a *api) list(ctx context.Context, metadata map[string]string) ([]SandboxInfo, error) {
	var all []SandboxInfo
	next := ""
	for {
		q := url.Values{}
		q.Set("state", "running,paused")
		if len(metadata) > 0 {
			m := url.Values{}
			for k, v := range metadata {
				m.Set(k, v)
			}
			q.Set("metadata", m.Encode())
		}
		q.Set("limit", "100")
		if next != "" {
			q.Set("nextToken", next)
		}
		var page []SandboxInfo
		var hdr http.Header
		resp, err := a.send(ctx, true, func() (*http.Request, error) {
			req, err := http.NewRequestWithContext(ctx, http.MethodGet, a.cfg.APIURL+"/v2/sandboxes?"+q.Encode(), nil)
			if err != nil {
				return nil, err
			}
			req.Header.Set("X-API-Key", a.cfg.APIKey)
			req.Header.Set("Accept", "application/json")
			return req, nil
		})
		if err != nil {
			return nil, fmt.Errorf("e2b list sandboxes: %w", err)
		}
		data, err := io.ReadAll(io.LimitReader(resp.Body, 16<<20))
		resp.Body.Close()
		if err != nil {
			return nil, fmt.Errorf("e2b list sandboxes: %w", err)
		}
		if resp.StatusCode != http.StatusOK {
			return nil, apiErrorFrom("list sandboxes", resp.StatusCode, data)
		}
		if err := json.Unmarshal(data, &page); err != nil {
			return nil, fmt.Errorf("e2b list sandboxes: decode: %w", err)
		}
		hdr = resp.Header
		all = append(all, page...)
		next = hdr.Get("X-Next-Token")
		if next == "" || len(page) == 0 {
			return all, nil
		}
	}
}

// validEnvd reports whether the sandbox's envd is new enough (>= 0.1.0,
// as the SDK requires).
func validEnvd(version string) bool {
	parts := strings.SplitN(version, ".", 3)
	if len(parts) < 2 {
		return false
	}
	major, err1 := strconv.Atoi(parts[0])
	minor, err2 := strconv.Atoi(parts[1])
	return err1 == nil && err2 == nil && (major > 0 || minor >= 1)
}
