package auth

import (
	"fmt"
	"strings"
)

// Answer is what the authorizer reads of a signal or update that
// answers a waiting call: its name and who it says answered.
type Answer struct {
	// Name of the signal or update.
	Name string
	// By is the approver the answer names; Via the principal that sent it.
	By, Via string
}

// Call is one request to the frontend, as the authorizer sees it.
type Call struct {
	// Method is the full gRPC method ("/temporal.api.workflowservice.v1.WorkflowService/SignalWorkflowExecution").
	Method string
	// Answers are the answers the request carries (signals and updates
	// named in AnswerNames), decoded; Undecodable is set when one could
	// not be read.
	Answers     []Answer
	Undecodable bool
}

// Policy decides what each role may call. AnswerNames are the signal and
// update names whose payload answers a waiting call.
type Policy struct {
	AnswerNames []string
}

// IsAnswer reports whether a signal or update name answers a waiting call.
func (p Policy) IsAnswer(name string) bool {
	for _, n := range p.AnswerNames {
		if n == name {
			return true
		}
	}
	return false
}

// Authorize returns nil when principal (nil: unauthenticated) may make
// call, and otherwise the reason it may not.
func (p Policy) Authorize(pr *Principal, c Call) error {
	svc, method := splitMethod(c.Method)
	if svc == "grpc.health.v1.Health" {
		return nil
	}
	if pr == nil {
		return fmt.Errorf("unauthenticated: %s needs a warden key (authorization: Bearer KEY); see `starter keys`", method)
	}
	if c.Undecodable {
		return fmt.Errorf("%s: an answer must be a JSON payload naming who answers (by, via)", method)
	}
	read := isRead(method)
	if pr.Role == RoleReader {
		if read {
			return nil
		}
		return fmt.Errorf("%s (%s) may only read; %s is not allowed", pr.Name, pr.Role, method)
	}
	for _, a := range c.Answers {
		if err := answerAllowed(pr, a); err != nil {
			return fmt.Errorf("%s: %w", method, err)
		}
	}
	switch pr.Role {
	case RoleAdmin:
		return nil
	case RoleWorker:
		if method == "StartBatchOperation" {
			return fmt.Errorf("%s (%s) may not start batch operations", pr.Name, pr.Role)
		}
		return nil
	case RoleDelegate, RoleApprover:
		if read || (method == "SignalWorkflowExecution" || method == "UpdateWorkflowExecution") && len(c.Answers) > 0 {
			return nil
		}
		return fmt.Errorf("%s (%s) may read and answer waiting calls; %s is not allowed", pr.Name, pr.Role, method)
	}
	return fmt.Errorf("%s has unknown role %q", pr.Name, pr.Role)
}

// answerAllowed checks who an answer says answered against who sent it.
func answerAllowed(pr *Principal, a Answer) error {
	if pr.Role == RoleWorker {
		return fmt.Errorf("%s (worker) may not answer waiting calls (%s)", pr.Name, a.Name)
	}
	if a.Via != pr.Name {
		return fmt.Errorf("answer %s says it came via %q but the key is %s's: set via to the key's name", a.Name, a.Via, pr.Name)
	}
	if pr.Role == RoleDelegate {
		if a.By == "" {
			return fmt.Errorf("%s answers on behalf of its users: the answer must name the user (by)", pr.Name)
		}
		return nil
	}
	if a.By != pr.Name {
		return fmt.Errorf("answer %s says it is by %q but the key is %s's: only a delegate (the inbox) answers for others", a.Name, a.By, pr.Name)
	}
	return nil
}

// isRead reports whether a frontend method only reads.
func isRead(method string) bool {
	for _, p := range []string{"Describe", "List", "Count", "Get", "Query", "Scan", "PollWorkflowExecutionUpdate"} {
		if strings.HasPrefix(method, p) {
			return true
		}
	}
	return false
}

// splitMethod splits "/pkg.Service/Method" into service and method.
func splitMethod(full string) (string, string) {
	full = strings.TrimPrefix(full, "/")
	svc, m, ok := strings.Cut(full, "/")
	if !ok {
		return "", full
	}
	return svc, m
}
