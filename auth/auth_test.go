package auth

import (
	"bytes"
	"encoding/json"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

func TestPolicy(t *testing.T) {
	t.Parallel()
	p := Policy{AnswerNames: []string{"approve", "external-result"}}
	const ws = "/temporal.api.workflowservice.v1.WorkflowService/"
	admin := &Principal{Name: "root", Role: RoleAdmin}
	worker := &Principal{Name: "w", Role: RoleWorker}
	alice := &Principal{Name: "alice", Role: RoleApprover}
	inbox := &Principal{Name: "inbox", Role: RoleDelegate}
	ui := &Principal{Name: "ui", Role: RoleReader}
	ans := func(by, via string) []Answer { return []Answer{{Name: "approve", By: by, Via: via}} }
	for _, c := range []struct {
		name string
		pr   *Principal
		call Call
		deny string // "" allows; otherwise a part of the reason
	}{
		{"health without key", nil, Call{Method: "/grpc.health.v1.Health/Check"}, ""},
		{"no key", nil, Call{Method: ws + "DescribeNamespace"}, "unauthenticated"},
		{"reader reads", ui, Call{Method: ws + "ListWorkflowExecutions"}, ""},
		{"reader queries", ui, Call{Method: ws + "QueryWorkflow"}, ""},
		{"reader signals", ui, Call{Method: ws + "SignalWorkflowExecution"}, "may only read"},
		{"reader terminates", ui, Call{Method: ws + "TerminateWorkflowExecution"}, "may only read"},
		{"worker polls", worker, Call{Method: ws + "PollWorkflowTaskQueue"}, ""},
		{"worker starts", worker, Call{Method: ws + "StartWorkflowExecution"}, ""},
		{"worker answers", worker, Call{Method: ws + "UpdateWorkflowExecution", Answers: ans("w", "w")}, "may not answer"},
		{"worker batch", worker, Call{Method: ws + "StartBatchOperation"}, "batch"},
		{"approver as self", alice, Call{Method: ws + "UpdateWorkflowExecution", Answers: ans("alice", "alice")}, ""},
		{"approver as other", alice, Call{Method: ws + "UpdateWorkflowExecution", Answers: ans("bob", "alice")}, "the key is alice's"},
		{"approver forged via", alice, Call{Method: ws + "SignalWorkflowExecution", Answers: ans("alice", "inbox")}, "came via"},
		{"approver starts", alice, Call{Method: ws + "StartWorkflowExecution"}, "not allowed"},
		{"approver other signal", alice, Call{Method: ws + "SignalWorkflowExecution"}, "not allowed"},
		{"approver terminates", alice, Call{Method: ws + "TerminateWorkflowExecution"}, "not allowed"},
		{"delegate for user", inbox, Call{Method: ws + "UpdateWorkflowExecution", Answers: ans("carol", "inbox")}, ""},
		{"delegate without user", inbox, Call{Method: ws + "UpdateWorkflowExecution", Answers: ans("", "inbox")}, "must name the user"},
		{"delegate forged via", inbox, Call{Method: ws + "UpdateWorkflowExecution", Answers: ans("carol", "alice")}, "came via"},
		{"admin as self", admin, Call{Method: ws + "SignalWorkflowExecution", Answers: ans("root", "root")}, ""},
		{"admin as other", admin, Call{Method: ws + "SignalWorkflowExecution", Answers: ans("alice", "root")}, "the key is root's"},
		{"admin anything", admin, Call{Method: ws + "DeleteWorkflowExecution"}, ""},
		{"undecodable answer", admin, Call{Method: ws + "SignalWorkflowExecution", Undecodable: true}, "JSON payload"},
	} {
		err := p.Authorize(c.pr, c.call)
		switch {
		case c.deny == "" && err != nil:
			t.Errorf("%s: refused: %v", c.name, err)
		case c.deny != "" && (err == nil || !strings.Contains(err.Error(), c.deny)):
			t.Errorf("%s: got %v, want refused with %q", c.name, err, c.deny)
		}
	}
}

func TestKeyring(t *testing.T) {
	t.Parallel()
	dir := filepath.Join(t.TempDir(), "auth")
	k, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	mem, err := k.Issue("worker", RoleWorker)
	if err != nil {
		t.Fatal(err)
	}
	if p, ok := k.Authenticate("Bearer " + mem); !ok || p != (Principal{"worker", RoleWorker}) {
		t.Fatalf("memory key: %+v %v", p, ok)
	}
	key, path, err := k.Create("alice", RoleApprover)
	if err != nil {
		t.Fatal(err)
	}
	if name, _ := NameOf(key); name != "alice" {
		t.Errorf("NameOf = %q", name)
	}
	read, err := ReadKeyFile(path)
	if err != nil || read != key {
		t.Fatalf("ReadKeyFile = %q, %v", read, err)
	}
	ring, _ := os.ReadFile(filepath.Join(dir, FileName))
	if strings.Contains(string(ring), key) {
		t.Error("the keyring file holds the key")
	}
	// Another process (starter) sees the same file.
	other, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	if p, ok := other.Authenticate(key); !ok || p.Name != "alice" {
		t.Fatalf("file key from a second keyring: %+v %v", p, ok)
	}
	if _, ok := other.Authenticate(mem); ok {
		t.Error("a memory key leaked into another keyring")
	}
	if _, ok := k.Authenticate(key + "x"); ok {
		t.Error("a changed key authenticated")
	}
	// Revoked by the second keyring: the first one refuses it within a
	// second (it looks at the file at most once a second).
	if err := other.Revoke("alice"); err != nil {
		t.Fatal(err)
	}
	time.Sleep(1100 * time.Millisecond)
	if _, ok := k.Authenticate(key); ok {
		t.Error("a revoked key still authenticates")
	}
	if _, err := os.Stat(path); !os.IsNotExist(err) {
		t.Errorf("revoked key file still there: %v", err)
	}
	// Ensure keeps a valid key and replaces a missing one.
	p1, err := k.Ensure(OperatorName, RoleAdmin)
	if err != nil {
		t.Fatal(err)
	}
	k1, _ := ReadKeyFile(p1)
	p2, _ := k.Ensure(OperatorName, RoleAdmin)
	if k2, _ := ReadKeyFile(p2); k2 != k1 {
		t.Error("Ensure replaced a valid key")
	}
	// A key file others may read is refused.
	if err := os.Chmod(p1, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := ReadKeyFile(p1); err == nil || !strings.Contains(err.Error(), "readable by others") {
		t.Errorf("world-readable key file: %v", err)
	}
	if _, err := k.Issue("a/b", RoleReader); err == nil {
		t.Error("a name with a slash was accepted")
	}
	if _, _, err := k.Create("x", Role("root")); err == nil {
		t.Error("an unknown role was accepted")
	}
}

// TestKeyringReloadFailure: a keyring file that becomes corrupt after
// the keyring loaded it is reported (Err, one error log line) and fails
// closed: its keys, among them one the broken edit meant to revoke, are
// refused until the file is fixed, while memory keys keep working.
func TestKeyringReloadFailure(t *testing.T) {
	t.Parallel()
	dir := filepath.Join(t.TempDir(), "auth")
	k, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	var logs bytes.Buffer
	k.SetLogger(slog.New(slog.NewTextHandler(&logs, nil)))
	mem, err := k.Issue("worker", RoleWorker)
	if err != nil {
		t.Fatal(err)
	}
	alice, _, err := k.Create("alice", RoleApprover)
	if err != nil {
		t.Fatal(err)
	}
	bob, _, err := k.Create("bob", RoleApprover)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := k.Authenticate(alice); !ok {
		t.Fatal("alice's key does not authenticate")
	}
	if err := k.Err(); err != nil {
		t.Fatalf("Err after a good load: %v", err)
	}
	file := filepath.Join(dir, FileName)
	good, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	goodStat, err := os.Stat(file)
	if err != nil {
		t.Fatal(err)
	}
	// An operator revokes alice by hand and leaves a syntax error.
	var kf keyFile
	if err := json.Unmarshal(good, &kf); err != nil {
		t.Fatal(err)
	}
	kf.Keys = slices.DeleteFunc(kf.Keys, func(e Entry) bool { return e.Name == "alice" })
	edited, _ := json.Marshal(kf)
	if err := os.WriteFile(file, append(edited, ','), 0o600); err != nil {
		t.Fatal(err)
	}
	time.Sleep(1100 * time.Millisecond) // past the once-a-second look
	if p, ok := k.Authenticate(alice); ok {
		t.Errorf("the revoked key authenticated as %+v after the keyring file became corrupt", p)
	}
	if _, ok := k.Authenticate(bob); ok {
		t.Error("a key of the corrupt keyring file authenticated")
	}
	if p, ok := k.Authenticate(mem); !ok || p.Name != "worker" {
		t.Errorf("memory key refused while the file is corrupt: %+v %v", p, ok)
	}
	if err := k.Err(); err == nil || !strings.Contains(err.Error(), file) {
		t.Errorf("Err = %v, want the keyring file's decode error", err)
	}
	got := logs.String()
	if n := strings.Count(got, "cannot reload the keyring file"); n != 1 || !strings.Contains(got, "level=ERROR") {
		t.Errorf("want one error log line for the failure (logged once however often keys are tried), got:\n%s", got)
	}
	// Restored from a backup with its old modification time (the stamp
	// the keyring last loaded): read again all the same.
	if err := os.WriteFile(file, good, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Chtimes(file, goodStat.ModTime(), goodStat.ModTime()); err != nil {
		t.Fatal(err)
	}
	time.Sleep(1100 * time.Millisecond)
	if p, ok := k.Authenticate(bob); !ok || p.Name != "bob" {
		t.Errorf("bob's key after the file was restored: %+v %v", p, ok)
	}
	if err := k.Err(); err != nil {
		t.Errorf("Err after the file was restored: %v", err)
	}
	got = logs.String()
	if !strings.Contains(got, "readable again") {
		t.Errorf("recovery not logged:\n%s", got)
	}
}
