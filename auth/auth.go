// Package auth authenticates the clients of warden's embedded Temporal
// server and decides what each may do. A client presents a key (sent as
// "authorization: Bearer KEY"); the keyring maps it to a principal with a
// role. Keys of the worker, the inbox and the Web UI live only in the
// worker's memory; keys for people (the local operator, named approvers)
// are files under the data directory, readable by their owner only, and
// only their SHA-256 is kept in the keyring file the server reads.
//
// The package links nothing of the Temporal server: internal/devserver
// adapts it to the server's claim mapper and authorizer.
package auth

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"fmt"
	"strings"
)

// Role says what a principal may do.
type Role string

// Roles, from most to least trusted.
const (
	// RoleAdmin may call every API; it answers as itself.
	RoleAdmin Role = "admin"
	// RoleWorker polls and completes tasks and starts turns; it never
	// answers approvals, AskUser questions or external results.
	RoleWorker Role = "worker"
	// RoleDelegate reads and answers on behalf of the users it has
	// authenticated itself (the inbox): the answer names the user, and
	// the delegate as the path.
	RoleDelegate Role = "delegate"
	// RoleApprover reads and answers as itself.
	RoleApprover Role = "approver"
	// RoleReader only reads (describe, list, count, get, query).
	RoleReader Role = "reader"
)

// Valid reports whether r is a known role.
func (r Role) Valid() bool {
	switch r {
	case RoleAdmin, RoleWorker, RoleDelegate, RoleApprover, RoleReader:
		return true
	}
	return false
}

// Principal is an authenticated client.
type Principal struct {
	Name string `json:"name"`
	Role Role   `json:"role"`
}

// keyPrefix starts every key: "wk1." + secret + "." + name.
const keyPrefix = "wk1."

// NewKey returns a fresh key for name: 256 random bits, and the name so
// that a client can tell whom it speaks for.
func NewKey(name string) (string, error) {
	if err := checkName(name); err != nil {
		return "", err
	}
	b := make([]byte, 32)
	if _, err := rand.Read(b); err != nil {
		return "", fmt.Errorf("auth: random key: %w", err)
	}
	return keyPrefix + base64.RawURLEncoding.EncodeToString(b) + "." + name, nil
}

// NameOf returns the principal name a key was issued for.
func NameOf(key string) (string, error) {
	rest, ok := strings.CutPrefix(strings.TrimSpace(key), keyPrefix)
	if !ok {
		return "", errors.New("auth: not a warden key")
	}
	_, name, ok := strings.Cut(rest, ".")
	if !ok || name == "" {
		return "", errors.New("auth: malformed warden key")
	}
	return name, nil
}

// IsKey reports whether s looks like a warden key (as opposed to the API
// key of a hosted Temporal cluster).
func IsKey(s string) bool { return strings.HasPrefix(strings.TrimSpace(s), keyPrefix) }

// digest is what the keyring stores of a key.
func digest(key string) string {
	sum := sha256.Sum256([]byte(strings.TrimSpace(key)))
	return base64.RawURLEncoding.EncodeToString(sum[:])
}

func checkName(name string) error {
	if name == "" || len(name) > 128 {
		return errors.New("auth: a key name is 1 to 128 characters")
	}
	for _, r := range name {
		if r <= ' ' || r == 0x7f || r == '/' || r == '\\' {
			return fmt.Errorf("auth: key name %q: no spaces, control characters or slashes", name)
		}
	}
	return nil
}

// BearerPrefix starts the authorization header value.
const BearerPrefix = "Bearer "

// Headers sends a key with every request of a Temporal SDK client (it
// implements the SDK's HeadersProvider).
type Headers string

// GetHeaders returns the authorization header carrying the key.
func (h Headers) GetHeaders(context.Context) (map[string]string, error) {
	return map[string]string{"authorization": BearerPrefix + string(h)}, nil
}
