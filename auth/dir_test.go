package auth

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestOpenDir: a directory without a keyring is refused unless create,
// which starts one; the keyring's file is named absolutely.
func TestOpenDir(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "auth")
	var nk *NoKeyringError
	if _, err := OpenDir(dir, false); !errors.As(err, &nk) || nk.Dir != dir || !strings.HasPrefix(err.Error(), "no keyring in "+dir+" (no keys.json)") {
		t.Fatalf("OpenDir without a keyring: %v", err)
	}
	if _, err := os.Stat(dir); err == nil {
		t.Fatal("the refused directory was created")
	}
	k, err := OpenDir(dir, true)
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := k.Create("alice", RoleApprover); err != nil {
		t.Fatal(err)
	}
	t.Chdir(filepath.Dir(dir))
	k, err = OpenDir("auth", false)
	if err != nil || k.File() != filepath.Join(dir, FileName) {
		t.Fatalf("OpenDir of an existing keyring, relative: %v, file %q", err, k.File())
	}
	if es, err := k.List(); err != nil || len(es) != 1 || es[0].Name != "alice" {
		t.Errorf("keys = %+v %v", es, err)
	}
	if _, err := OpenDir("", true); err == nil {
		t.Error("an empty directory was opened")
	}
}

func TestWriteKeys(t *testing.T) {
	created := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	var out bytes.Buffer
	if err := WriteKeys(&out, []Entry{{Name: "alice", Role: RoleApprover, Created: created}, {Name: "ci", Role: RoleWorker, Created: created}}); err != nil {
		t.Fatal(err)
	}
	want := "NAME   ROLE      CREATED\nalice  approver  2026-01-02 03:04:05Z\nci     worker    2026-01-02 03:04:05Z\n"
	if out.String() != want {
		t.Errorf("table:\n%s\nwant:\n%s", out.String(), want)
	}
}
