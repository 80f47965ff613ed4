package tests

import (
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"go.temporal.io/api/serviceerror"
	"go.temporal.io/api/workflowservice/v1"
	tclient "go.temporal.io/sdk/client"

	"github.com/wardenhq/warden/audit"
	"github.com/wardenhq/warden/client"
	"github.com/wardenhq/warden/workflows"
)

// TestAuthenticatedApprovals runs the worker binary as a user would (an
// embedded server, which requires keys by default) and checks each
// boundary docs/approvals.md claims: a client without a key, or with an unknown
// or revoked key, is refused; an approver answers only as itself, on the
// Update and the signal path, through the starter and the library; the
// inbox answers for its signed-in users; the Web UI only reads; a tool
// process gets no key in its environment and cannot read the key
// directory, even in bypass mode; the audit records the authenticated
// key of every answer.
func TestAuthenticatedApprovals(t *testing.T) {
	ctx := ctxT(t, 4*time.Minute)
	wbin, sbin := buildWorker(t), buildStarter(t)
	dir := t.TempDir()
	dataDir, workdir := filepath.Join(dir, "data"), filepath.Join(dir, "work")
	if err := os.MkdirAll(workdir, 0o755); err != nil {
		t.Fatal(err)
	}
	port, uiPort, inboxPort := freePort(t), freePort(t), freePort(t)
	cfg := filepath.Join(dir, "config.yaml")
	if err := os.WriteFile(cfg, []byte(fmt.Sprintf(`server: {data_dir: %q, port: %d, ui_port: %d}
worker: {workdir: %q, task_queue: auth}
inbox: {enabled: true, listen: "127.0.0.1:%d", users: {carol: {token: carol-token}, alice: {token: alice-token}, bob: {token: bob-token}}}
metrics: {addr: "off"}
`, dataDir, port, uiPort, workdir, inboxPort)), 0o644); err != nil {
		t.Fatal(err)
	}
	// The worker's own environment names a key file: tool processes must
	// not see it.
	t.Setenv("WARDEN_KEY_FILE", filepath.Join(dataDir, "auth", "operator.key"))
	proc, addr := startEmbedded(t, wbin, dir, "--config", cfg)
	defer killProcess(t, proc)
	os.Unsetenv("WARDEN_KEY_FILE")

	// Key files: owner-only, and the keyring holds digests, not keys.
	keyDir := filepath.Join(dataDir, "auth")
	opKey := filepath.Join(keyDir, "operator.key")
	for path, want := range map[string]os.FileMode{keyDir: 0o700, opKey: 0o600, filepath.Join(keyDir, "keys.json"): 0o600} {
		st, err := os.Stat(path)
		if err != nil {
			t.Fatal(err)
		}
		if st.Mode().Perm() != want {
			t.Errorf("%s: mode %04o, want %04o", path, st.Mode().Perm(), want)
		}
	}
	opSecret, err := os.ReadFile(opKey)
	if err != nil {
		t.Fatal(err)
	}
	if ring, _ := os.ReadFile(filepath.Join(keyDir, "keys.json")); strings.Contains(string(ring), strings.TrimSpace(string(opSecret))) {
		t.Error("keys.json holds the operator's key itself")
	}

	// 1. No key: refused, with the reason.
	anon, err := tclient.NewLazyClient(tclient.Options{HostPort: addr, Namespace: "default", Logger: quietLog()})
	if err != nil {
		t.Fatal(err)
	}
	defer anon.Close()
	_, err = anon.WorkflowService().DescribeNamespace(ctx, &workflowservice.DescribeNamespaceRequest{Namespace: "default"})
	var denied *serviceerror.PermissionDenied
	if !errors.As(err, &denied) || !strings.Contains(denied.Reason, "unauthenticated") {
		t.Fatalf("client without a key: %v, want permission denied (unauthenticated)", err)
	}

	// 2. The starter finds the operator key from the config alone.
	starter := func(args ...string) (string, error) {
		return runStarter(t, sbin, dir, append([]string{"--config", cfg}, args...)...)
	}
	outside := filepath.Join(dir, "outside-marker")
	scriptFile := filepath.Join(dir, "turn.yaml")
	if err := os.WriteFile(scriptFile, []byte(fmt.Sprintf(`prompt: auth
steps:
  - tool_calls:
      - {id: c1, name: Bash, input: {command: "env"}}
      - {id: c2, name: Bash, input: {command: "touch %s"}}
  - text: done
`, outside)), 0o644); err != nil {
		t.Fatal(err)
	}
	if out, err := starter("run", "--script", scriptFile, "--workflow-id", "auth-1", "--detach"); err != nil {
		t.Fatalf("starter run with the operator key found in the data directory: %v\n%s", err, out)
	}
	op := dialAt(t, addr, opKey)
	defer op.Close()
	cl := client.New(op, "auth")
	cl.Via = "operator"
	p := waitPending(t, cl, "auth-1", 1)[0]
	if p.CallID != "c2" {
		t.Fatalf("pending %+v, want c2", p)
	}
	// A signal without a key cannot answer either.
	if err := anon.SignalWorkflow(ctx, "auth-1", "", workflows.SignalApprove,
		workflows.Approval{CallID: "c2", Hash: p.Hash, Decision: workflows.DecisionAllow, By: "x", Via: "x"}); !errors.As(err, &denied) {
		t.Fatalf("signal without a key: %v, want permission denied", err)
	}

	// 3. An approver's key answers as its owner only.
	if out, err := starter("keys", "create", "alice"); err != nil {
		t.Fatalf("keys create: %v\n%s", err, out)
	}
	aliceKey := filepath.Join(keyDir, "alice.key")
	for _, args := range [][]string{
		{"approvals", "approve", "auth-1", "c2", "--by", "bob"},
		{"approvals", "approve", "auth-1", "c2", "--by", "bob", "--signal"},
	} {
		out, err := starter(append([]string{"--key-file", aliceKey}, args...)...)
		if err == nil || !strings.Contains(err.Error(), "the key is alice's") {
			t.Errorf("starter %v with alice's key: %v\n%s; want refused (the key is alice's)", args, err, out)
		}
	}
	alice := client.New(dialAt(t, addr, aliceKey), "auth")
	alice.Via = "alice"
	_, err = alice.ApproveListed(ctx, "auth-1", p, workflows.Approval{Decision: workflows.DecisionAllow, By: "operator"})
	if err == nil || !strings.Contains(err.Error(), "the key is alice's") {
		t.Errorf("library Approve as operator with alice's key: %v, want refused", err)
	}
	// The operator (admin) may not answer as someone else either.
	_, err = cl.ApproveListed(ctx, "auth-1", p, workflows.Approval{Decision: workflows.DecisionAllow, By: "alice"})
	if err == nil || !strings.Contains(err.Error(), "the key is operator's") {
		t.Errorf("operator answering as alice: %v, want refused", err)
	}
	// A client that forges its via is refused too.
	_, err = alice.ApproveListed(ctx, "auth-1", p, workflows.Approval{Decision: workflows.DecisionAllow, By: "operator", Via: "operator"})
	if err == nil || !strings.Contains(err.Error(), "came via") {
		t.Errorf("alice forging via operator: %v, want refused", err)
	}

	// 4. The Web UI reads, but cannot answer.
	jar, _ := cookiejar.New(nil)
	ui := &http.Client{Jar: jar, Timeout: 10 * time.Second}
	uiBase := fmt.Sprintf("http://127.0.0.1:%d/api/v1/namespaces/default/workflows", uiPort)
	code, body := httpDo(t, ui, http.MethodGet, uiBase, "", nil)
	if code != http.StatusOK || !strings.Contains(body, "auth-1") {
		t.Errorf("UI list: %d %s", code, tail(body, 300))
	}
	csrf := ""
	for _, c := range jar.Cookies(mustURL(t, uiBase)) {
		if c.Name == "_csrf" {
			csrf = c.Value
		}
	}
	payload, _ := json.Marshal(workflows.Approval{CallID: "c2", Hash: p.Hash, Decision: workflows.DecisionAllow, By: "web-ui", Via: "web-ui"})
	sig := fmt.Sprintf(`{"input":{"payloads":[{"metadata":{"encoding":"anNvbi9wbGFpbg=="},"data":%q}]}}`, b64(payload))
	code, body = httpDo(t, ui, http.MethodPost, uiBase+"/auth-1/signal/approve", sig, map[string]string{"X-CSRF-TOKEN": csrf})
	if code == http.StatusOK || !strings.Contains(body, "may only read") {
		t.Errorf("UI signal: %d %s; want refused (may only read)", code, tail(body, 300))
	}

	// 5. A revoked key stops working.
	if out, err := starter("keys", "create", "temp", "--role", "reader"); err != nil {
		t.Fatalf("keys create temp: %v\n%s", err, out)
	}
	if out, err := starter("--key-file", filepath.Join(keyDir, "temp.key"), "approvals", "list"); err != nil {
		t.Fatalf("reader lists: %v\n%s", err, out)
	}
	tempSecret, _ := os.ReadFile(filepath.Join(keyDir, "temp.key"))
	if out, err := starter("keys", "revoke", "temp"); err != nil {
		t.Fatalf("keys revoke: %v\n%s", err, out)
	}
	tempFile := filepath.Join(dir, "temp-copy.key")
	if err := os.WriteFile(tempFile, tempSecret, 0o600); err != nil {
		t.Fatal(err)
	}
	waitFor(t, ctx, func() bool {
		_, err := starter("--key-file", tempFile, "approvals", "list")
		return err != nil && strings.Contains(err.Error(), "not known")
	})

	// 6. Alice answers as herself: accepted, and the audit names her key.
	if out, err := starter("--key-file", aliceKey, "approvals", "approve", "auth-1", "c2"); err != nil {
		t.Fatalf("alice approves: %v\n%s", err, out)
	}
	if _, err := cl.Result(ctx, "auth-1"); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(outside); err != nil {
		t.Errorf("the approved call did not run: %v", err)
	}
	// The tool process saw neither the key file variable nor a key.
	conv, err := starter("show", "auth-1")
	if err != nil {
		t.Fatalf("show: %v\n%s", err, conv)
	}
	if !strings.Contains(conv, "PATH=") {
		t.Fatalf("the env call's output is not in the conversation:\n%s", tail(conv, 2000))
	}
	if strings.Contains(conv, "WARDEN_KEY_FILE") || strings.Contains(conv, "wk1.") {
		t.Errorf("a tool process saw a key:\n%s", tail(conv, 2000))
	}

	// 7. The inbox answers for carol, who signed in to it.
	if out, err := starter("run", "--script", scriptFile, "--workflow-id", "auth-2", "--detach"); err != nil {
		t.Fatalf("run auth-2: %v\n%s", err, out)
	}
	p2 := waitPending(t, cl, "auth-2", 1)[0]
	code, body = apiPost(t, fmt.Sprintf("http://127.0.0.1:%d/api/approve", inboxPort), "carol-token",
		map[string]any{"workflow_id": "auth-2", "call_id": p2.CallID, "decision": "allow", "hash": p2.Hash})
	if code != http.StatusOK {
		t.Fatalf("inbox approve: %d %s", code, body)
	}
	if _, err := cl.Result(ctx, "auth-2"); err != nil {
		t.Fatal(err)
	}

	// 8. The audit: who answered, and with which key.
	for id, want := range map[string][2]string{"auth-1": {"alice", "alice"}, "auth-2": {"carol", "inbox"}} {
		out, err := starter("audit", "--workflow", id, "--jsonl")
		if err != nil {
			t.Fatalf("audit %s: %v\n%s", id, err, out)
		}
		found := false
		for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
			var r audit.Record
			if err := json.Unmarshal([]byte(line), &r); err != nil {
				t.Fatalf("audit line %q: %v", line, err)
			}
			if r.Kind == audit.KindApproval {
				found = true
				if r.By != want[0] || r.Identity != want[1] {
					t.Errorf("%s approval by=%q identity=%q, want %q via key %q", id, r.By, r.Identity, want[0], want[1])
				}
			}
		}
		if !found {
			t.Errorf("%s: no approval in the audit:\n%s", id, out)
		}
	}

	// 9. A tool reading the key directory is denied, even when an allow
	// rule covers the command: the data directory is protected, in every
	// mode (bypass included), and no human is asked.
	steal := filepath.Join(dir, "steal.yaml")
	if err := os.WriteFile(steal, []byte(fmt.Sprintf(`prompt: steal
steps:
  - tool_calls:
      - {id: s1, name: Bash, input: {command: "cat %s > %s"}}
      - {id: s2, name: Read, input: {file_path: %q}}
  - text: done
`, opKey, filepath.Join(workdir, "stolen"), opKey)), 0o644); err != nil {
		t.Fatal(err)
	}
	rules := filepath.Join(dir, "rules.yaml")
	if err := os.WriteFile(rules, []byte("mode: bypass\nallow: [\"Bash(cat:*)\", \"Read\"]\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if out, err := starter("run", "--script", steal, "--workflow-id", "auth-3", "--rules", rules, "--detach"); err != nil {
		t.Fatalf("run auth-3: %v\n%s", err, out)
	}
	if _, err := cl.Result(ctx, "auth-3"); err != nil {
		t.Fatal(err)
	}
	if conv, err := starter("show", "auth-3"); err != nil || strings.Count(conv, "is protected") < 2 {
		t.Errorf("want both calls denied as protected (%v):\n%s", err, tail(conv, 2000))
	}
	if conv, err := starter("show", "auth-3"); err != nil || strings.Contains(conv, "wk1.") {
		t.Errorf("a tool read a key (%v):\n%s", err, tail(conv, 2000))
	}
	if _, err := os.Stat(filepath.Join(workdir, "stolen")); err == nil {
		t.Error("the Bash call that copies the key ran")
	}
}

// httpDo sends a request with optional headers and returns the status and body.
func httpDo(t *testing.T, c *http.Client, method, url, body string, headers map[string]string) (int, string) {
	t.Helper()
	var r io.Reader
	if body != "" {
		r = strings.NewReader(body)
	}
	req, err := http.NewRequest(method, url, r)
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range headers {
		req.Header.Set(k, v)
	}
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

func mustURL(t *testing.T, s string) *url.URL {
	t.Helper()
	u, err := url.Parse(s)
	if err != nil {
		t.Fatal(err)
	}
	return u
}

func b64(b []byte) string { return base64.StdEncoding.EncodeToString(b) }
