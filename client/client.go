// Package client is a typed client for warden turns over a Temporal
// client you already have: start turns, follow their events, list and
// answer pending approvals, complete external tool calls.
package client

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"go.temporal.io/api/serviceerror"
	tclient "go.temporal.io/sdk/client"
	"go.temporal.io/sdk/temporal"

	"github.com/wardenhq/warden/tools"
	"github.com/wardenhq/warden/workflows"
)

// Client drives warden turns.
type Client struct {
	c         tclient.Client
	taskQueue string
	// PollInterval is how often Watch polls for events (default 250 ms).
	PollInterval time.Duration
	// Approvers, when set, is recorded with every turn this client starts
	// whose input names none: who may answer its calls (the workflow
	// checks every answer against it). Approvers builds it from the inbox
	// users and roles of a config: the one approver model, which the
	// inbox, the CLI and Slack check answers against too.
	Approvers *workflows.Approvers
	// Via is the name of the warden key the underlying Temporal client
	// authenticates with (auth.NameOf). Answers sent through this client
	// carry it, and name it as the approver when they name nobody: a
	// server with keys refuses an answer whose via is not its key's.
	Via string
	// LivePolicy is the policy store (its workflow id) the turns this
	// client starts follow when their input names none: "" is
	// workflows.DefaultPolicyStore, NoLivePolicy starts them with the
	// static policy only. The store is made (once per client) before the
	// first turn that follows it starts, so a remembered approval always
	// has a store to go to.
	LivePolicy string
	// RuleTools are checked with the built-in tools before a turn starts
	// (Start) and before live rules are set (SetPolicy): a permission
	// rule with content for one of them that cannot match content (a
	// function tool without tools.WithContentField or tools.WithMatcher,
	// PowerShell, AskUser) is refused (decide.CheckRules). Give it the
	// function tools your workers register; rules of tools it does not
	// know are checked where they meet the worker's registry.
	RuleTools []tools.Tool
	// Namespace is the namespace of the Temporal client, as errors name
	// it (the commands that create warden's search attributes in it);
	// empty, they say NAMESPACE.
	Namespace string

	storesMu sync.Mutex
	stores   map[string]bool // policy stores made by this client
}

// sign fills in who an answer comes from: the key's name as via, and as
// by when the answer names nobody.
func (cl *Client) sign(by, via *string) {
	if *via == "" {
		*via = cl.Via
	}
	if *by == "" {
		*by = *via
	}
}

// New returns a client that starts turns on taskQueue.
func New(c tclient.Client, taskQueue string) *Client {
	return &Client{c: c, taskQueue: taskQueue}
}

// Explain adds the reason a server with keys gave for refusing a call
// (the SDK's error says only "Request unauthorized."). Other errors,
// and nil, come back unchanged.
func Explain(err error) error {
	var denied *serviceerror.PermissionDenied
	if errors.As(err, &denied) && denied.Reason != "" {
		return fmt.Errorf("%w: %s", err, denied.Reason)
	}
	return err
}

// ErrRejected wraps an update the workflow's validator rejected.
var ErrRejected = errors.New("rejected")

func update[T any](ctx context.Context, cl *Client, workflowID, name string, arg any) (T, error) {
	var out T
	h, err := cl.c.UpdateWorkflow(ctx, tclient.UpdateWorkflowOptions{
		WorkflowID: workflowID, UpdateName: name, Args: []any{arg},
		WaitForStage: tclient.WorkflowUpdateStageCompleted,
	})
	if err != nil {
		return out, fmt.Errorf("%s: %w", name, Explain(err))
	}
	if err := h.Get(ctx, &out); err != nil {
		return out, fmt.Errorf("%s: %w: %w", name, ErrRejected, plain(err))
	}
	return out, nil
}

// plain is the workflow's own message of an update's failure: the SDK's
// ApplicationError adds "(type: wrapError, retryable: true)" and repeats
// the wrapped causes, which an approver need not read.
func plain(err error) error {
	var ae *temporal.ApplicationError
	if errors.As(err, &ae) && ae.Message() != "" {
		return &plainError{msg: ae.Message(), err: err}
	}
	return err
}

// plainError is an error shown by its message alone that still unwraps
// to the SDK's error.
type plainError struct {
	msg string
	err error
}

func (e *plainError) Error() string { return e.msg }

func (e *plainError) Unwrap() error { return e.err }
