package tools

import (
	"context"
	"errors"
)

// CallDetails identify the tool call a tool runs for, as the worker's
// tool activity knows it (CallInfo).
type CallDetails struct {
	// Tool is the tool's name and CallID the model's id of the call in
	// its turn.
	Tool   string
	CallID string
	// IdempotencyKey is the call's key (Env.IdempotencyKey): the turn's
	// workflow id, "/", the call id. It is the same on every attempt of
	// the call, on any worker, and across the turn's continue-as-new
	// runs; pass it to an API that deduplicates requests so that a
	// retried call does its work once.
	IdempotencyKey string
	// Attempt counts the activity's attempts at the call, from 1.
	Attempt int32
	// WorkflowID is the turn's workflow id.
	WorkflowID string
}

type callInfoKey struct{}

// WithCallInfo returns ctx carrying d. The worker's tool activity calls
// it before the middleware chain and the tool run; tests of a tool may
// call it too.
func WithCallInfo(ctx context.Context, d CallDetails) context.Context {
	return context.WithValue(ctx, callInfoKey{}, d)
}

// CallInfo returns the details of the call ctx runs (WithCallInfo), for
// function tools, whose function gets only (ctx, In):
//
//	func charge(ctx context.Context, in ChargeIn) (string, error) {
//		call, _ := tools.CallInfo(ctx)
//		return payments.Charge(ctx, in.Amount, call.IdempotencyKey)
//	}
//
// ok is false outside a tool call (a unit test that calls the function
// directly).
func CallInfo(ctx context.Context) (d CallDetails, ok bool) {
	d, ok = ctx.Value(callInfoKey{}).(CallDetails)
	return d, ok
}

// Retryable marks an error of a function tool's function as a failed
// attempt instead of a result: the call fails with it as an
// infrastructure error, which the tool activity's retry policy retries
// (read-only tools up to 3 attempts by default, side-effecting ones only
// with tools.NAME.retry.max_attempts; CallInfo's key stays the same).
// When no attempt is left the model reads "Tool failed: ..." with the
// error. Any other error of the function is a result the model reads at
// once.
func Retryable(err error) error {
	if err == nil {
		return nil
	}
	return &retryableError{err: err}
}

type retryableError struct{ err error }

func (e *retryableError) Error() string { return e.err.Error() }
func (e *retryableError) Unwrap() error { return e.err }

// isRetryable reports whether err was marked with Retryable.
func isRetryable(err error) bool {
	var re *retryableError
	return errors.As(err, &re)
}
