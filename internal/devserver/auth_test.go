package devserver

import (
	"context"
	"crypto/tls"
	"errors"
	"strings"
	"testing"
	"time"

	"go.temporal.io/api/serviceerror"
	"go.temporal.io/api/workflowservice/v1"
	sdkclient "go.temporal.io/sdk/client"

	"github.com/wardenhq/warden/auth"
)

// TestFrontendRequiresKeys starts a server with Auth and checks that a
// client without a key, with an unknown key, or with a reader key cannot
// do what it is not allowed to, while an admin key can.
func TestFrontendRequiresKeys(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	keys, err := auth.Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	admin, err := keys.Issue("root", auth.RoleAdmin)
	if err != nil {
		t.Fatal(err)
	}
	reader, err := keys.Issue("ui", auth.RoleReader)
	if err != nil {
		t.Fatal(err)
	}
	srv, err := Start(ctx, Options{Namespace: "default", LogLevel: "error",
		Auth: &Auth{Keys: keys, Policy: auth.Policy{AnswerNames: []string{"approve"}}, ClientKey: admin, UIKey: reader}})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Stop()
	dial := func(key string) sdkclient.Client {
		o := sdkclient.Options{HostPort: srv.Addr(), Namespace: "default", Logger: quietLogger{}}
		if key != "" {
			o.HeadersProvider = auth.Headers(key)
		}
		c, err := sdkclient.NewLazyClient(o)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(c.Close)
		return c
	}
	describe := func(c sdkclient.Client) error {
		_, err := c.WorkflowService().DescribeNamespace(ctx, &workflowservice.DescribeNamespaceRequest{Namespace: "default"})
		return err
	}
	var denied *serviceerror.PermissionDenied
	if err := describe(dial("")); !errors.As(err, &denied) || !strings.Contains(denied.Reason, "unauthenticated") {
		t.Fatalf("no key: got %v, want permission denied saying unauthenticated", err)
	}
	stranger, _ := auth.NewKey("stranger")
	if err := describe(dial(stranger)); !errors.As(err, &denied) || !strings.Contains(denied.Reason, "not known") {
		t.Fatalf("unknown key: got %v, want permission denied naming an unknown key", err)
	}
	if err := describe(dial(reader)); err != nil {
		t.Fatalf("reader describe: %v", err)
	}
	_, err = dial(reader).ExecuteWorkflow(ctx, sdkclient.StartWorkflowOptions{TaskQueue: "q"}, "Any")
	if !errors.As(err, &denied) {
		t.Fatalf("reader start: got %v, want permission denied", err)
	}
	run, err := dial(admin).ExecuteWorkflow(ctx, sdkclient.StartWorkflowOptions{TaskQueue: "q"}, "Any")
	if err != nil {
		t.Fatalf("admin start: %v", err)
	}
	// The internal frontend trusts its callers as the system: without the
	// internode certificate nobody gets through, key or not.
	for i, key := range []string{"", admin, admin} {
		o := sdkclient.Options{HostPort: srv.internalAddr, Namespace: "default", Logger: quietLogger{}}
		if key != "" {
			o.HeadersProvider = auth.Headers(key)
		}
		if i == 2 { // TLS, but without a client certificate
			o.ConnectionOptions.TLS = &tls.Config{InsecureSkipVerify: true} //nolint:gosec // the point of the test
		}
		c, err := sdkclient.NewLazyClient(o)
		if err != nil {
			t.Fatal(err)
		}
		short, cancelShort := context.WithTimeout(ctx, 3*time.Second)
		_, err = c.WorkflowService().DescribeNamespace(short, &workflowservice.DescribeNamespaceRequest{Namespace: "default"})
		cancelShort()
		c.Close()
		if err == nil {
			t.Fatalf("internal frontend %s answered a client without the internode certificate", srv.internalAddr)
		}
	}
	// A signal answering a waiting call must say it comes via the key's
	// own name and by it.
	err = dial(admin).SignalWorkflow(ctx, run.GetID(), "", "approve", map[string]string{"by": "mallory", "via": "root"})
	if !errors.As(err, &denied) || !strings.Contains(denied.Reason, "mallory") {
		t.Fatalf("admin answering as another: got %v, want denied", err)
	}
	if err := dial(admin).SignalWorkflow(ctx, run.GetID(), "", "approve", map[string]string{"by": "root", "via": "root"}); err != nil {
		t.Fatalf("admin answering as itself: %v", err)
	}
	// Signals that are not answers are not checked for by/via.
	if err := dial(admin).SignalWorkflow(ctx, run.GetID(), "", "other", "x"); err != nil {
		t.Fatalf("other signal: %v", err)
	}
}
