package main

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/wardenhq/warden/chat"
)

// TestChatTestPostsSample: `starter chat test` posts the sample message
// to chat.slack.channel at chat.slack.api_url (a local stand-in of
// Slack's chat.postMessage) with the bot token from the environment;
// without the token it refuses and posts nothing (the control).
func TestChatTestPostsSample(t *testing.T) {
	var mu sync.Mutex
	var got []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_ = r.ParseForm()
		mu.Lock()
		// slack-go sends the token as a form field; Slack also takes it as a bearer.
		auth := r.Header.Get("Authorization")
		if auth == "" {
			auth = "Bearer " + r.Form.Get("token")
		}
		got = append(got, r.URL.Path+" "+auth+" "+r.Form.Get("channel")+" "+r.Form.Get("blocks"))
		mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"ok":true,"channel":%q,"ts":"1700000000.000001"}`, r.Form.Get("channel"))
	}))
	defer srv.Close()
	cfg := filepath.Join(t.TempDir(), "warden.yaml")
	if err := os.WriteFile(cfg, []byte("chat:\n  slack:\n    channel: C0TEST\n    api_url: "+srv.URL+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv(chat.EnvBotToken, "")
	if out, err := execute(t, newChatCmd(&conn{config: cfg}), "", "test"); err == nil || !strings.Contains(err.Error(), chat.EnvBotToken) {
		t.Fatalf("without a token: %v\n%s", err, out)
	}
	t.Setenv(chat.EnvBotToken, "xoxb-sample")
	out, err := execute(t, newChatCmd(&conn{config: cfg}), "", "test")
	if err != nil || !strings.Contains(out, "posted to C0TEST (ts 1700000000.000001)") {
		t.Fatalf("chat test: %v\n%s", err, out)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(got) != 1 || !strings.HasPrefix(got[0], "/chat.postMessage Bearer xoxb-sample C0TEST ") || !strings.Contains(got[0], "kubectl rollout restart") {
		t.Fatalf("requests = %q", got)
	}
}
