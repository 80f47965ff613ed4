package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/wardenhq/warden/auth"
)

func runKeys(t *testing.T, args ...string) (string, error) {
	t.Helper()
	return execute(t, newKeysCmd(&conn{}), "", args...)
}

// TestKeysCreateNeedsAKeyring: creating a key where no keyring exists is
// refused unless --init, and the keyring changed is named.
func TestKeysCreateNeedsAKeyring(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "auth")
	out, err := runKeys(t, "create", "alice", "--dir", dir)
	if err == nil || !strings.Contains(err.Error(), "no keyring in "+dir) {
		t.Fatalf("create without a keyring: %v\n%s", err, out)
	}
	if _, err := os.Stat(filepath.Join(dir, "alice.key")); err == nil {
		t.Fatal("a key was written anyway")
	}
	out, err = runKeys(t, "create", "alice", "--dir", dir, "--init")
	ring := filepath.Join(dir, auth.FileName)
	if err != nil || !strings.Contains(out, "(keyring "+ring+")") {
		t.Fatalf("create --init: %v\n%s", err, out)
	}
	out, err = runKeys(t, "create", "bob", "--dir", dir)
	if err != nil || !strings.Contains(out, "created approver key for bob") || !strings.Contains(out, ring) {
		t.Fatalf("create in an existing keyring: %v\n%s", err, out)
	}
	out, err = runKeys(t, "revoke", "alice", "--dir", dir)
	if err != nil || out != "revoked alice (keyring "+ring+")\n" {
		t.Fatalf("revoke: %v\n%s", err, out)
	}
	out, err = runKeys(t, "list", "--dir", dir)
	if err != nil || !strings.HasPrefix(out, "NAME  ROLE      CREATED\nbob   approver  ") || strings.Contains(out, "alice") {
		t.Fatalf("list: %v\n%s", err, out)
	}
}

// TestApproveScopeFlags: the remembered-approval flags are checked before
// anything is sent.
func TestApproveScopeFlags(t *testing.T) {
	for args, want := range map[string]string{
		"approve wf c1 --ttl 1h":                              "add --always",
		"approve wf c1 --always --once":                       "need --scope",
		"approve wf c1 --always --scope everywhere":           `--scope "everywhere"`,
		"approve wf c1 --always --scope namespace --agent ci": "--agent names the agent of --scope agent",
		"approve wf c1 --always --scope input --ttl -1h":      "--ttl -1h0m0s",
	} {
		if _, err := execute(t, newApprovalsCmd(&conn{}), "", strings.Fields(args)...); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v, want an error about %s", args, err, want)
		}
	}
}
