package node

import (
	"fmt"

	"github.com/wardenhq/warden/auth"
	"github.com/wardenhq/warden/config"
	"github.com/wardenhq/warden/internal/devserver"
	"github.com/wardenhq/warden/workflows"
)

// serverAuth makes the embedded server require keys (unless
// server.no_auth): the keyring under server.data_dir/auth with the
// operator's key file (admin), and keys that live only in this process
// for the worker itself and the Web UI (a reader). It returns the
// keyring (nil without auth).
func serverAuth(o *devserver.Options, cfg config.Config) (*auth.Keyring, error) {
	if cfg.Server.NoAuth {
		return nil, nil
	}
	keys, err := auth.Open(cfg.KeyDir())
	if err != nil {
		return nil, err
	}
	if keys.Dir() != "" {
		if _, err := keys.Ensure(auth.OperatorName, auth.RoleAdmin); err != nil {
			return nil, err
		}
	}
	workerKey, err := keys.Issue("worker", auth.RoleWorker)
	if err != nil {
		return nil, err
	}
	uiKey, err := keys.Issue("web-ui", auth.RoleReader)
	if err != nil {
		return nil, err
	}
	o.Auth = &devserver.Auth{Keys: keys, Policy: answerPolicy(), ClientKey: workerKey, UIKey: uiKey}
	return keys, nil
}

// answerPolicy names the signals and updates that answer waiting calls,
// and those that message, pause, resume or cancel a turn: each names who
// sends it (by, via), which the key must match, as for an answer.
func answerPolicy() auth.Policy {
	return auth.Policy{AnswerNames: []string{workflows.UpdateApprove, workflows.SignalApprove,
		workflows.UpdateExternalResult, workflows.SignalExternalResult,
		workflows.UpdateMessage, workflows.UpdateControl}}
}

// printKeys says where the operator's key is (or that there are none).
func printKeys(keys *auth.Keyring) {
	switch {
	case keys == nil:
		fmt.Println("keys             OFF (server.no_auth): any local process may answer approvals")
	case keys.Dir() == "":
		fmt.Println("keys             required; in memory only (no data directory)")
	default:
		fmt.Printf("keys             required; operator key %s (starter finds it)\n", keys.KeyPath(auth.OperatorName))
	}
}
