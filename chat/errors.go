package chat

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/url"
	"strconv"

	"github.com/slack-go/slack"
)

// Describe is a one-line account of a failed Slack call (Post,
// Answered) for the worker's log and the turn's events: what went wrong
// ("Slack unreachable: connection refused", "Slack refused it:
// channel_not_found", "Slack answered 503 Service Unavailable", "rate
// limited by Slack, retry after 2s"), without the transport's whole
// error chain. An error it does not know is its innermost cause.
func Describe(err error) string {
	if err == nil {
		return ""
	}
	var (
		rl     *RateLimited
		api    slack.SlackErrorResponse
		status slack.StatusCodeError
		dns    *net.DNSError
		op     *net.OpError
		ue     *url.Error
	)
	switch {
	case errors.As(err, &rl):
		return fmt.Sprintf("rate limited by Slack, retry after %s", rl.RetryAfter)
	case errors.As(err, &api):
		return "Slack refused it: " + api.Err
	case errors.As(err, &status):
		if status.Status == "" {
			return "Slack answered HTTP " + strconv.Itoa(status.Code)
		}
		return "Slack answered " + status.Status
	case errors.Is(err, context.DeadlineExceeded) || errors.As(err, &ue) && ue.Timeout():
		return "Slack did not answer in time"
	case errors.Is(err, context.Canceled):
		return "canceled before Slack answered"
	case errors.As(err, &dns):
		return "Slack unreachable: cannot resolve " + dns.Name
	case errors.As(err, &op):
		return "Slack unreachable: " + innermost(op.Err)
	case errors.As(err, &ue):
		return "Slack unreachable: " + innermost(ue.Err)
	}
	return innermost(err)
}

// innermost is the message of the last error of err's chain of single
// causes ("connection refused" of "dial tcp ...: connect: connection
// refused").
func innermost(err error) string {
	for {
		next := errors.Unwrap(err)
		if next == nil {
			return err.Error()
		}
		err = next
	}
}
