// Command approval-service is a small HTTP service that lets people
// answer warden's pending approvals, built on package client alone:
//
//	GET  /pending[?tool=Bash&kind=approval&older_than=10m]
//	     lists pending entries across all running turns, oldest first;
//	POST /approve {"workflow_id", "call_id", "decision", "hash", "reason", "by"}
//	     answers one with an Update, which the workflow validates: a
//	     stale hash, an unknown or already answered call gives 409.
//
//	go run ./examples/approval-service --address 127.0.0.1:7233 --listen 127.0.0.1:8080
//	go run ./examples/approval-service --address HOST:7233 --tls-cert c.pem --tls-key c.key --tls-ca ca.pem
//	curl -s localhost:8080/pending
//	curl -s -d '{"workflow_id":"turn-1","call_id":"c1","decision":"allow","hash":"HASH","by":"alice"}' localhost:8080/approve
//
// HASH is the entry's "hash" as GET /pending lists it: the workflow
// rejects an answer without it, or with one of a call or policy that
// changed since (409).
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"syscall"
	"time"

	tclient "go.temporal.io/sdk/client"
	sdklog "go.temporal.io/sdk/log"

	"github.com/wardenhq/warden/client"
	"github.com/wardenhq/warden/config"
	"github.com/wardenhq/warden/workflows"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "approval-service:", err)
		os.Exit(1)
	}
}

func run() error {
	address := flag.String("address", "127.0.0.1:7233", "Temporal frontend address")
	keyFile := flag.String("key-file", os.Getenv("WARDEN_KEY_FILE"), "warden key file, for a server that requires keys (env WARDEN_KEY_FILE)")
	namespace := flag.String("namespace", "default", "Temporal namespace")
	listen := flag.String("listen", "127.0.0.1:8080", "HTTP listen address (port 0 picks a free port)")
	// For a cluster warden did not build: a client certificate (mTLS), or
	// an API key or JWT sent as a bearer token over TLS.
	tlsCert := flag.String("tls-cert", os.Getenv("TEMPORAL_TLS_CERT"), "client certificate (env TEMPORAL_TLS_CERT)")
	tlsKey := flag.String("tls-key", os.Getenv("TEMPORAL_TLS_KEY"), "client certificate's key (env TEMPORAL_TLS_KEY)")
	tlsCA := flag.String("tls-ca", os.Getenv("TEMPORAL_TLS_CA"), "CA of the server's certificate (env TEMPORAL_TLS_CA)")
	apiKey := flag.String("api-key", os.Getenv("TEMPORAL_API_KEY"), "API key or JWT (env TEMPORAL_API_KEY)")
	flag.Parse()

	logger := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	// config.Temporal turns a key file, certificates or an API key into
	// the client's credentials.
	conn := config.Temporal{Address: *address, Namespace: *namespace, KeyFile: *keyFile,
		TLSCert: *tlsCert, TLSKey: *tlsKey, TLSCA: *tlsCA, APIKey: *apiKey}
	opts, err := client.DialOptions(conn)
	if err != nil {
		return err
	}
	opts.Logger = sdklog.NewStructuredLogger(logger)
	c, err := tclient.Dial(opts)
	if err != nil {
		return fmt.Errorf("dial %s: %w", *address, err)
	}
	defer c.Close()

	// The task queue only matters for starting turns, which this service
	// does not do.
	// Answers name the key they are sent with (a delegate key answers
	// for the people named in "by"; see `starter keys`).
	cl := client.New(c, "")
	cl.Via = client.KeyName(conn)
	cl.Namespace = *namespace
	srv := &http.Server{Handler: newHandler(cl, logger), ReadHeaderTimeout: 10 * time.Second}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	go func() {
		<-ctx.Done()
		shutdown, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = srv.Shutdown(shutdown)
	}()
	ln, err := net.Listen("tcp", *listen)
	if err != nil {
		return fmt.Errorf("listen: %w", err)
	}
	// The first line of stdout is the address, for scripts (and tests)
	// that listen on port 0.
	fmt.Printf("listening on http://%s\n", ln.Addr())
	if err := srv.Serve(ln); !errors.Is(err, http.ErrServerClosed) {
		return fmt.Errorf("serve: %w", err)
	}
	return nil
}

// approveRequest is the body of POST /approve.
type approveRequest struct {
	WorkflowID string             `json:"workflow_id"`
	CallID     string             `json:"call_id"`
	Decision   workflows.Decision `json:"decision"`
	// Hash is the listed entry's hash (required): it binds the answer to
	// the entry the approver saw.
	Hash   string   `json:"hash"`
	Rules  []string `json:"rules,omitempty"`
	Reason string   `json:"reason,omitempty"`
	By     string   `json:"by,omitempty"`
}

func newHandler(cl *client.Client, logger *slog.Logger) http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /pending", func(w http.ResponseWriter, r *http.Request) {
		q := r.URL.Query()
		f := client.Filter{Tool: q.Get("tool"), Kind: workflows.PendingKind(q.Get("kind"))}
		if s := q.Get("older_than"); s != "" {
			d, err := time.ParseDuration(s)
			if err != nil {
				http.Error(w, "older_than: "+err.Error(), http.StatusBadRequest)
				return
			}
			f.OlderThan = d
		}
		entries, err := cl.ListPending(r.Context(), f)
		if err != nil {
			logger.Error("list pending", "err", err)
			http.Error(w, err.Error(), http.StatusBadGateway)
			return
		}
		if entries == nil {
			entries = []client.PendingEntry{}
		}
		writeJSON(w, http.StatusOK, entries)
	})
	mux.HandleFunc("POST /approve", func(w http.ResponseWriter, r *http.Request) {
		var req approveRequest
		dec := json.NewDecoder(http.MaxBytesReader(w, r.Body, 1<<20))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&req); err != nil {
			http.Error(w, "body: "+err.Error(), http.StatusBadRequest)
			return
		}
		if req.WorkflowID == "" || req.CallID == "" || req.Hash == "" {
			http.Error(w, "workflow_id, call_id and hash (the entry's, as GET /pending lists it) are required", http.StatusBadRequest)
			return
		}
		ack, err := cl.Approve(r.Context(), req.WorkflowID, workflows.Approval{
			CallID: req.CallID, Decision: req.Decision, Hash: req.Hash,
			Rules: req.Rules, Reason: req.Reason, By: req.By,
		})
		switch {
		case errors.Is(err, client.ErrRejected):
			http.Error(w, err.Error(), http.StatusConflict)
			return
		case err != nil:
			logger.Error("approve", "workflow_id", req.WorkflowID, "call_id", req.CallID, "err", err)
			http.Error(w, err.Error(), http.StatusBadGateway)
			return
		}
		writeJSON(w, http.StatusOK, ack)
	})
	return mux
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	_ = enc.Encode(v)
}
