// Package deploytool holds the tools of the custom-tool example: a Go
// function made into a tool with tools.Func, and a struct tool with its
// own permission check. A worker adds them with
//
//	warden.Register(w, warden.Options{Tools: deploytool.Tools()})
package deploytool

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/wardenhq/warden/permission"
	"github.com/wardenhq/warden/tools"
)

// Tools returns the example's tools: ServiceStatus and Deploy.
func Tools() []tools.Tool {
	return []tools.Tool{ServiceStatus(), Deploy{}}
}

// StatusInput is ServiceStatus's input.
type StatusInput struct {
	Service string `json:"service" jsonschema:"description=Name of the service"`
}

// ServiceStatus is a read-only function tool: Func derives its schema
// from StatusInput, and WithReadOnly lets the engine allow it without
// asking.
func ServiceStatus() tools.Tool {
	t, err := tools.Func("ServiceStatus", "Show the deployed version of a service.",
		func(_ context.Context, in StatusInput) (string, error) {
			if in.Service == "" {
				return "", fmt.Errorf("service is required")
			}
			return fmt.Sprintf("%s: v1.4.2 on staging, v1.4.1 on prod", in.Service), nil
		},
		tools.WithReadOnly(true))
	if err != nil {
		panic(err) // the arguments are constants: a failure is a bug here
	}
	return t
}

// DeployInput is Deploy's input.
type DeployInput struct {
	Service string `json:"service"`
	Version string `json:"version"`
	// Env is the target environment: staging or prod.
	Env string `json:"env"`
}

// The environments Deploy knows.
const (
	EnvStaging = "staging"
	EnvProd    = "prod"
)

// ProdMessage is the message of Deploy's ASK for prod.
const ProdMessage = "Deploying to prod needs a human approval."

var deploySchema = json.RawMessage(`{
  "type": "object",
  "properties": {
    "service": {"type": "string", "description": "Service to deploy."},
    "version": {"type": "string", "description": "Version to deploy."},
    "env": {"type": "string", "enum": ["staging", "prod"], "description": "Target environment."}
  },
  "required": ["service", "version", "env"],
  "additionalProperties": false
}`)

// Deploy is a struct tool that deploys a service. Its own permission
// check allows staging, always asks for prod (a bypass-immune ASK: allow
// rules cannot skip it) and denies anything else. Rules match on the
// environment: "Deploy(prod)".
type Deploy struct{}

// Info implements tools.Tool.
func (Deploy) Info() tools.Info {
	return tools.Info{Name: "Deploy", Description: "Deploy a service version to an environment.", InputSchema: deploySchema}
}

// CheckPermissions implements tools.PermissionChecker.
func (Deploy) CheckPermissions(_ context.Context, _ *tools.Env, input json.RawMessage, _ *permission.Context) (permission.Decision, error) {
	in, err := decode(input)
	if err != nil {
		return permission.Decision{}, err
	}
	switch in.Env {
	case EnvStaging:
		return permission.Decision{Behavior: permission.Allow, Message: "Staging deploys are allowed."}, nil
	case EnvProd:
		return permission.Decision{Behavior: permission.Ask, Message: ProdMessage, BypassImmune: true}, nil
	}
	return permission.Decision{Behavior: permission.Deny, Message: fmt.Sprintf("Unknown environment %q.", in.Env)}, nil
}

// MatchRule implements tools.RuleMatcher: a rule's content is an
// environment name.
func (Deploy) MatchRule(_ context.Context, _ *tools.Env, content string, input json.RawMessage) (bool, error) {
	in, err := decode(input)
	if err != nil {
		return false, err
	}
	return strings.TrimSpace(content) == in.Env, nil
}

// Call implements tools.Tool. A real tool would call a deploy API here,
// passing an idempotency key so that a retried activity deploys once.
func (Deploy) Call(ctx context.Context, _ *tools.Env, input json.RawMessage) tools.Stream {
	in, err := decode(input)
	if err != nil {
		return tools.Errorf("Invalid input for Deploy: %v", err)
	}
	if err := ctx.Err(); err != nil {
		return tools.Fail(fmt.Errorf("deploy: %w", err))
	}
	return tools.Single(tools.Chunk{
		Text:     fmt.Sprintf("Deployed %s %s to %s.", in.Service, in.Version, in.Env),
		Metadata: map[string]any{"env": in.Env},
	})
}

func decode(input json.RawMessage) (DeployInput, error) {
	var in DeployInput
	if err := json.Unmarshal(input, &in); err != nil {
		return in, fmt.Errorf("deploy input: %w", err)
	}
	return in, nil
}
