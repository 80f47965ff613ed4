// Package contenttest is the conformance suite every content.Store runs:
// the same behaviour on the local directory and on S3.
package contenttest

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/wardenhq/warden/content"
	"github.com/wardenhq/warden/model"
)

// Run checks a store: round trips, idempotent puts, missing objects,
// turns with awkward ids, listing and deletion, and a Log on top of it.
func Run(t *testing.T, s content.Store) {
	ctx := context.Background()
	t.Run("RoundTrip", func(t *testing.T) { runRoundTrip(t, s) })
	t.Run("Missing", func(t *testing.T) {
		_, err := s.Get(ctx, "turn-a", content.ID([]byte("never stored")))
		if !errors.Is(err, content.ErrNotFound) {
			t.Fatalf("missing object: %v, want ErrNotFound", err)
		}
	})
	t.Run("BadName", func(t *testing.T) {
		if err := s.Put(ctx, "turn-a", "../../etc/passwd", []byte("x")); err == nil && s.String()[:3] == "fs:" {
			t.Fatal("a path as object name was accepted")
		}
	})
	t.Run("TurnsAndDelete", func(t *testing.T) { runTurnsAndDelete(t, s) })
	t.Run("Log", func(t *testing.T) { runLog(t, s) })
}

// runRoundTrip puts a large object twice (the second put is a no-op) and
// gets it back.
func runRoundTrip(t *testing.T, s content.Store) {
	ctx := context.Background()
	data := []byte(strings.Repeat("x", 70_000))
	id := content.ID(data)
	if err := s.Put(ctx, "turn-a", id, data); err != nil {
		t.Fatal(err)
	}
	// A second put of the same id is a no-op, not an error.
	if err := s.Put(ctx, "turn-a", id, data); err != nil {
		t.Fatal(err)
	}
	got, err := s.Get(ctx, "turn-a", id)
	if err != nil || string(got) != string(data) {
		t.Fatalf("get: %d bytes, %v", len(got), err)
	}
}

// runTurnsAndDelete stores objects under a turn id with awkward characters,
// rewrites its head, lists the turns and deletes that turn alone.
func runTurnsAndDelete(t *testing.T, s content.Store) {
	ctx := context.Background()
	odd := "batch/job 7/../x.y"
	data := []byte("hello")
	if err := s.Put(ctx, odd, content.ID(data), data); err != nil {
		t.Fatal(err)
	}
	if err := s.Put(ctx, odd, content.HeadName, []byte("h1")); err != nil {
		t.Fatal(err)
	}
	if err := s.Put(ctx, odd, content.HeadName, []byte("h2")); err != nil {
		t.Fatal(err)
	}
	if h, err := s.Get(ctx, odd, content.HeadName); err != nil || string(h) != "h2" {
		t.Fatalf("head rewritten: %q %v", h, err)
	}
	turns, err := s.Turns(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(turns, odd) || !slices.Contains(turns, "turn-a") {
		t.Fatalf("turns %q lack %q or turn-a", turns, odd)
	}
	if err := s.DeleteTurn(ctx, odd); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Get(ctx, odd, content.ID(data)); !errors.Is(err, content.ErrNotFound) {
		t.Fatalf("after delete: %v", err)
	}
	if _, err := s.Get(ctx, "turn-a", content.ID([]byte(strings.Repeat("x", 70_000)))); err != nil {
		t.Fatalf("deleting one turn touched another: %v", err)
	}
}

func runLog(t *testing.T, s content.Store) {
	ctx := context.Background()
	big := strings.Repeat("line of output\n", 5000)
	l := &content.Log{Store: s}
	h1, err := l.Append(ctx, "log-turn", "", []model.Message{{Role: model.RoleUser, Content: "do it"}})
	if err != nil {
		t.Fatal(err)
	}
	h2, err := l.Append(ctx, "log-turn", h1, []model.Message{{Role: model.RoleTool, Content: big, ToolCallID: "c1"}})
	if err != nil {
		t.Fatal(err)
	}
	// The stored node holds a reference and a preview, not the content.
	n, err := l.Node(ctx, "log-turn", h2)
	if err != nil {
		t.Fatal(err)
	}
	if n.Prev != h1 || n.Messages[0].Ref == "" || len(n.Messages[0].Content) > content.PreviewBytes+4 || n.Messages[0].Size != len(big) {
		t.Fatalf("node %+v: want prev %s and a reference with a preview", n.Prev, h1)
	}
	// A fresh Log (another worker, no cache) loads the whole conversation.
	other := &content.Log{Store: s}
	msgs, err := other.Load(ctx, "log-turn", h2)
	if err != nil {
		t.Fatal(err)
	}
	if len(msgs) != 2 || msgs[0].Content != "do it" || msgs[1].Content != big || msgs[1].Ref != "" {
		t.Fatalf("loaded %d messages", len(msgs))
	}
	if h, err := other.Head(ctx, "log-turn"); err != nil || h != h2 {
		t.Fatalf("head %q %v, want %q", h, err, h2)
	}
	// A missing object gives a MissingError naming the turn and object.
	if err := s.DeleteTurn(ctx, "log-turn"); err != nil {
		t.Fatal(err)
	}
	_, err = (&content.Log{Store: s}).Load(ctx, "log-turn", h2)
	var me *content.MissingError
	if !errors.As(err, &me) || me.Turn != "log-turn" || !errors.Is(err, content.ErrNotFound) {
		t.Fatalf("load after delete: %v, want a MissingError", err)
	}
}
