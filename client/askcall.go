package client

import (
	"context"
	"errors"
	"fmt"

	"github.com/wardenhq/warden/workflows"
)

// ErrNotAskUser is wrapped by AskUserCall's error for a pending call of
// another tool.
var ErrNotAskUser = errors.New("not an AskUser question")

// AskUserCall returns a turn's pending AskUser call callID (its input
// holds the questions): PendingCall, refusing a call of another tool with
// an error wrapping ErrNotAskUser.
func (cl *Client) AskUserCall(ctx context.Context, workflowID, callID string) (workflows.Pending, error) {
	p, err := cl.PendingCall(ctx, workflowID, callID)
	if err != nil {
		return p, err
	}
	if p.Tool != AskUserTool {
		return p, fmt.Errorf("call %s is a %s call, %w", callID, p.Tool, ErrNotAskUser)
	}
	return p, nil
}
