package client

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/wardenhq/warden/tools"
	"github.com/wardenhq/warden/workflows"
)

// AskUserTool is the name of the built-in AskUser tool.
const AskUserTool = "AskUser"

// ErrNoPendingCall is returned when a turn has no open call with the
// given id (never asked, already answered, or the turn ended).
var ErrNoPendingCall = errors.New("no pending call")

// ErrInvalidAnswer wraps an AskUser answer that does not fit the
// questions; such an answer is never sent.
var ErrInvalidAnswer = errors.New("invalid answer")

// PendingCall returns the open pending entry of one call of a turn, or
// an error wrapping ErrNoPendingCall.
func (cl *Client) PendingCall(ctx context.Context, workflowID, callID string) (workflows.Pending, error) {
	ps, err := cl.Pending(ctx, workflowID)
	if err != nil {
		return workflows.Pending{}, fmt.Errorf("turn %s: %w", workflowID, err)
	}
	i := slices.IndexFunc(ps, func(p workflows.Pending) bool { return p.CallID == callID })
	if i < 0 {
		return workflows.Pending{}, fmt.Errorf("turn %s: %w %s", workflowID, ErrNoPendingCall, callID)
	}
	return ps[i], nil
}

// AnswerAskUser answers a pending AskUser call: it fetches the call's
// questions, checks answer against them with tools.ValidateAskUserAnswer
// (an invalid answer returns an error wrapping ErrInvalidAnswer and
// nothing is sent), and completes the call with AskUserResult, bound to
// the questions it checked (their hash). by names who answered.
func (cl *Client) AnswerAskUser(ctx context.Context, workflowID, callID string, answer tools.AskUserAnswer, by string) (workflows.Ack, error) {
	p, err := cl.PendingCall(ctx, workflowID, callID)
	if err != nil {
		return workflows.Ack{}, err
	}
	if p.Kind != workflows.PendingExternal || p.Tool != AskUserTool {
		return workflows.Ack{}, fmt.Errorf("call %s is a pending %s %s call, not an AskUser question", callID, p.Tool, p.Kind)
	}
	if err := tools.ValidateAskUserAnswer(p.Input, answer); err != nil {
		return workflows.Ack{}, fmt.Errorf("%w: %w", ErrInvalidAnswer, err)
	}
	r, err := AskUserResult(callID, answer, by)
	if err != nil {
		return workflows.Ack{}, err
	}
	r.Hash = p.Hash
	return cl.CompleteExternal(ctx, workflowID, r)
}

// AskUserResult builds the external result that answers an AskUser call:
// Content is FormatAskUserAnswer's text for the model and Metadata holds
// the answer in the AskUserAnswer shape ({"answers": [...]}). It does not
// validate the answer.
func AskUserResult(callID string, answer tools.AskUserAnswer, by string) (workflows.ExternalResult, error) {
	r := workflows.ExternalResult{CallID: callID, Content: FormatAskUserAnswer(answer), By: by}
	if answer.Answers == nil {
		answer.Answers = []tools.AskUserQuestionAnswer{}
	}
	for i := range answer.Answers {
		if answer.Answers[i].Selected == nil {
			answer.Answers[i].Selected = []string{}
		}
	}
	b, err := json.Marshal(answer)
	if err != nil {
		return r, fmt.Errorf("encode answer: %w", err)
	}
	if err := json.Unmarshal(b, &r.Metadata); err != nil {
		return r, fmt.Errorf("encode answer: %w", err)
	}
	return r, nil
}

// FormatAskUserAnswer renders an answer for the model, one line per
// question: "- Which env? → staging", with free text after the labels.
func FormatAskUserAnswer(a tools.AskUserAnswer) string {
	var b strings.Builder
	b.WriteString("The user answered:")
	for _, q := range a.Answers {
		fmt.Fprintf(&b, "\n- %s → %s", q.Question, strings.Join(q.Selected, ", "))
		if q.Other != nil && *q.Other != "" {
			if len(q.Selected) > 0 {
				b.WriteString("; ")
			}
			fmt.Fprintf(&b, "other: %s", *q.Other)
		}
	}
	return b.String()
}

// AskUserAnswerFrom builds an answer from command-line style choices for
// the questions of an AskUser input. With a single question, selections
// are option labels and other is its free text. With several, each
// selection and each other entry is "KEY=VALUE", where KEY is a question's
// text or its header. Each question's other text is set only when given.
// The answer is not validated: pass it to tools.ValidateAskUserAnswer.
func AskUserAnswerFrom(input json.RawMessage, selections, other []string) (tools.AskUserAnswer, error) {
	var in tools.AskUserInput
	if err := json.Unmarshal(input, &in); err != nil {
		return tools.AskUserAnswer{}, fmt.Errorf("AskUser input: %w", err)
	}
	if len(in.Questions) == 0 {
		return tools.AskUserAnswer{}, errors.New("AskUser input has no questions")
	}
	ans := tools.AskUserAnswer{Answers: make([]tools.AskUserQuestionAnswer, len(in.Questions))}
	for i, q := range in.Questions {
		ans.Answers[i] = tools.AskUserQuestionAnswer{Question: q.Question, Selected: []string{}}
	}
	if len(in.Questions) == 1 {
		ans.Answers[0].Selected = append(ans.Answers[0].Selected, selections...)
		if len(other) > 1 {
			return ans, errors.New("one question takes one free-text answer")
		}
		if len(other) == 1 {
			ans.Answers[0].Other = &other[0]
		}
		return ans, nil
	}
	// find returns the question a "KEY=VALUE" entry is about. The longest
	// matching key wins, so a question text containing "=" still works.
	find := func(entry string) (int, string, error) {
		best, bestLen := -1, -1
		for i, q := range in.Questions {
			for _, key := range []string{q.Question, q.Header} {
				if key != "" && strings.HasPrefix(entry, key+"=") && len(key) > bestLen {
					best, bestLen = i, len(key)
				}
			}
		}
		if best < 0 {
			return 0, "", fmt.Errorf("%q: with several questions, write QUESTION=VALUE (question text or header)", entry)
		}
		return best, entry[bestLen+1:], nil
	}
	for _, s := range selections {
		i, label, err := find(s)
		if err != nil {
			return ans, err
		}
		ans.Answers[i].Selected = append(ans.Answers[i].Selected, label)
	}
	for _, o := range other {
		i, text, err := find(o)
		if err != nil {
			return ans, err
		}
		if ans.Answers[i].Other != nil {
			return ans, fmt.Errorf("question %q has two free-text answers", ans.Answers[i].Question)
		}
		ans.Answers[i].Other = &text
	}
	return ans, nil
}
