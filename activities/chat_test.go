package activities

import (
	"bytes"
	"errors"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/testsuite"

	"github.com/wardenhq/warden/chat"
	"github.com/wardenhq/warden/metrics"
	"github.com/wardenhq/warden/workflows"
)

// syncBuffer is a log destination the activity's goroutine and the test
// share.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// TestChatOutage: a post to a Slack that is down and an update Slack
// refuses each fail the attempt with a one-line message (what failed and
// why, no transport chain), are logged as one line each, and are counted
// by operation in warden_chat_failures_total.
func TestChatOutage(t *testing.T) {
	t.Parallel()
	down := httptest.NewServer(http.NotFoundHandler())
	downURL := down.URL
	down.Close()
	refusing := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"ok":false,"error":"channel_not_found"}`))
	}))
	defer refusing.Close()
	reg := prometheus.NewRegistry()
	var log syncBuffer
	logger := slog.New(slog.NewTextHandler(&log, nil))
	in := workflows.ChatInput{WorkflowID: "wf", Pending: workflows.Pending{CallID: "c1", Tool: "Bash"}}
	var s testsuite.WorkflowTestSuite

	a := &Activities{Chat: &Chat{Service: chat.New("xoxb-test", downURL, nil), Channel: "C1"}, ChatMetrics: metrics.NewChat(reg), Logger: logger}
	env := s.NewTestActivityEnvironment()
	env.RegisterActivity(a.ChatPost)
	_, err := env.ExecuteActivity(a.ChatPost, in)
	var ae *temporal.ApplicationError
	want := "slack: call c1 of turn wf not posted to C1: Slack unreachable: connection refused"
	if !errors.As(err, &ae) || ae.Type() != ErrTypeChatFailed || ae.Message() != want {
		t.Fatalf("post error %v, want %s %q", err, ErrTypeChatFailed, want)
	}

	a.Chat.Service = chat.New("xoxb-test", refusing.URL, nil)
	in.Answer = &workflows.AnswerNote{Decision: "allow", By: "alice"}
	in.Refs = []workflows.ChatRef{{Channel: "C1", TS: "1.2"}}
	env = s.NewTestActivityEnvironment()
	env.RegisterActivity(a.ChatUpdate)
	_, err = env.ExecuteActivity(a.ChatUpdate, in)
	want2 := "slack: message of call c1 of turn wf in C1 not updated: Slack refused it: channel_not_found"
	if !errors.As(err, &ae) || ae.Message() != want2 {
		t.Fatalf("update error %v, want %q", err, want2)
	}

	lines := strings.Split(strings.TrimSpace(log.String()), "\n")
	if len(lines) != 2 || !strings.Contains(lines[0], want+" (attempt 1; retried)") || !strings.Contains(lines[1], want2) ||
		!strings.Contains(lines[0], "level=WARN") {
		t.Errorf("log:\n%s", log.String())
	}
	exp := `# HELP warden_chat_failures_total Failed Slack calls by operation (post: a waiting call's message, update: the message once answered), each failed attempt counted.
# TYPE warden_chat_failures_total counter
warden_chat_failures_total{op="post"} 1
warden_chat_failures_total{op="update"} 1
`
	if err := testutil.GatherAndCompare(reg, strings.NewReader(exp), metrics.MetricChatFailures); err != nil {
		t.Error(err)
	}
}
