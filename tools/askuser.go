package tools

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/wardenhq/warden/permission"
)

// AskUser asks the user multiple-choice questions. It is an external
// tool: the worker never runs it; the client answers and the result
// carries an AskUserAnswer in its metadata (check it with
// ValidateAskUserAnswer).
type AskUser struct{}

// AskUserInput is AskUser's input.
type AskUserInput struct {
	Questions []AskUserQuestion `json:"questions" jsonschema:"minItems=1,maxItems=4" jsonschema_description:"The questions to ask (1-4), each with a unique question text."`
}

// AskUserQuestion is one question with its options.
type AskUserQuestion struct {
	Question string `json:"question" jsonschema:"minLength=1" jsonschema_description:"The full question, ending with a question mark."`
	// Header is a short label (at most 12 characters) for the question.
	Header      string          `json:"header" jsonschema:"minLength=1,maxLength=12" jsonschema_description:"A very short label shown as a chip (max 12 characters)."`
	Context     string          `json:"context,omitempty" jsonschema_description:"Optional background for the question."`
	Options     []AskUserOption `json:"options" jsonschema:"minItems=2,maxItems=4" jsonschema_description:"2-4 choices with unique labels. Do not add an 'Other' option: the user can always type free text."`
	MultiSelect bool            `json:"multi_select,omitempty" jsonschema:"default=false" jsonschema_description:"Allow selecting several options."`
}

// AskUserOption is one choice.
type AskUserOption struct {
	Label       string `json:"label" jsonschema:"minLength=1" jsonschema_description:"The choice shown to the user (1-5 words)."`
	Description string `json:"description" jsonschema_description:"What this choice means."`
	Preview     string `json:"preview,omitempty" jsonschema_description:"Optional preview (e.g. code or a mockup) for single-select questions."`
}

// AskUserAnswer is the user's answer, carried in the result metadata.
type AskUserAnswer struct {
	Answers []AskUserQuestionAnswer `json:"answers"`
}

// AskUserQuestionAnswer answers one question: the question text
// verbatim, the selected option labels and optional free text.
type AskUserQuestionAnswer struct {
	Question string   `json:"question"`
	Selected []string `json:"selected"`
	Other    *string  `json:"other,omitempty"`
}

// AskUserMaxHeader is the longest header, in characters.
const AskUserMaxHeader = 12

// askUserSchema is the input schema, derived from the input struct once.
var askUserSchema = builtinSchema[AskUserInput]()

// Info implements Tool.
func (AskUser) Info() Info {
	return Info{
		Name: "AskUser",
		Description: "Ask the user 1-4 multiple-choice questions when you need their decision or preferences. " +
			"Each question has a short header and 2-4 options; the user may also answer in free text.",
		InputSchema:     askUserSchema(),
		ReadOnly:        true,
		ConcurrencySafe: true,
		External:        true,
	}
}

// CheckPermissions implements PermissionChecker: always allowed.
func (AskUser) CheckPermissions(context.Context, *Env, json.RawMessage, *permission.Context) (permission.Decision, error) {
	return permission.Decision{Behavior: permission.Allow, Message: "The AskUser tool is always permitted."}, nil
}

// CheckInput implements InputChecker with ValidateAskUserInput: the
// questions are checked before anyone is asked them.
func (AskUser) CheckInput(_ context.Context, _ *Env, input json.RawMessage) error {
	_, err := ValidateAskUserInput(input)
	return err
}

// Call implements Tool. AskUser is external, so this only reports that
// the call must be answered from outside the worker.
func (AskUser) Call(context.Context, *Env, json.RawMessage) Stream {
	return Errorf("AskUser is an external tool: it is answered by the user from outside the worker and cannot be run here.")
}

// ValidateAskUserInput checks an AskUser input beyond its JSON schema:
// counts, header length and uniqueness of question texts and of option
// labels within a question. Its error is an *InputError, the message
// the model reads.
func ValidateAskUserInput(input json.RawMessage) (AskUserInput, error) {
	return parseInput[AskUserInput]("AskUser", input)
}

func (in AskUserInput) check() string {
	if n := len(in.Questions); n < 1 || n > 4 {
		return fmt.Sprintf("askuser: want 1 to 4 questions, got %d", n)
	}
	var seen []string
	for qi, q := range in.Questions {
		if q.Question == "" {
			return fmt.Sprintf("askuser: question %d has no text", qi+1)
		}
		if slices.Contains(seen, q.Question) {
			return fmt.Sprintf("askuser: question texts must be unique: %q appears twice", q.Question)
		}
		seen = append(seen, q.Question)
		if n := len([]rune(q.Header)); n == 0 || n > AskUserMaxHeader {
			return fmt.Sprintf("askuser: question %q: header must be 1 to %d characters, got %d", q.Question, AskUserMaxHeader, n)
		}
		if n := len(q.Options); n < 2 || n > 4 {
			return fmt.Sprintf("askuser: question %q: want 2 to 4 options, got %d", q.Question, n)
		}
		var labels []string
		for _, o := range q.Options {
			if o.Label == "" {
				return fmt.Sprintf("askuser: question %q: an option has an empty label", q.Question)
			}
			if slices.Contains(labels, o.Label) {
				return fmt.Sprintf("askuser: question %q: option labels must be unique: %q appears twice", q.Question, o.Label)
			}
			labels = append(labels, o.Label)
		}
	}
	return ""
}

// ValidateAskUserAnswer checks that answer fits the questions of input:
// exactly one answer per question, matched by verbatim question text;
// selected labels must be options of that question; a single-select
// question takes at most one label; free text in Other is always allowed.
// An answer with neither a selection nor free text is an error.
func ValidateAskUserAnswer(input json.RawMessage, answer AskUserAnswer) error {
	in, err := ValidateAskUserInput(input)
	if err != nil {
		return err
	}
	byText := map[string]AskUserQuestion{}
	for _, q := range in.Questions {
		byText[q.Question] = q
	}
	answered := map[string]bool{}
	for _, a := range answer.Answers {
		q, ok := byText[a.Question]
		if !ok {
			return fmt.Errorf("askuser: answer to unknown question %q (questions must be quoted verbatim)", a.Question)
		}
		if answered[a.Question] {
			return fmt.Errorf("askuser: question %q is answered twice", a.Question)
		}
		answered[a.Question] = true
		if !q.MultiSelect && len(a.Selected) > 1 {
			return fmt.Errorf("askuser: question %q is single-select but %d options are selected", a.Question, len(a.Selected))
		}
		for i, l := range a.Selected {
			if !slices.ContainsFunc(q.Options, func(o AskUserOption) bool { return o.Label == l }) {
				return fmt.Errorf("askuser: question %q has no option %q", a.Question, l)
			}
			if slices.Contains(a.Selected[:i], l) {
				return fmt.Errorf("askuser: question %q: option %q is selected twice", a.Question, l)
			}
		}
		if len(a.Selected) == 0 && a.Other == nil {
			return fmt.Errorf("askuser: question %q has neither a selected option nor free text", a.Question)
		}
	}
	var missing []string
	for _, q := range in.Questions {
		if !answered[q.Question] {
			missing = append(missing, fmt.Sprintf("%q", q.Question))
		}
	}
	if len(missing) > 0 {
		return errors.New("askuser: unanswered questions: " + strings.Join(missing, ", "))
	}
	return nil
}
