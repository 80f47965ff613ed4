package content_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/wardenhq/warden/content"
	"github.com/wardenhq/warden/content/contenttest"
	"github.com/wardenhq/warden/model"
)

func TestFS(t *testing.T) {
	t.Parallel()
	s, err := content.NewFS(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	contenttest.Run(t, s)
}

func TestFSPermissionsAndNoTempLeft(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	s, err := content.NewFS(dir)
	if err != nil {
		t.Fatal(err)
	}
	data := []byte("secret output")
	if err := s.Put(context.Background(), "t", content.ID(data), data); err != nil {
		t.Fatal(err)
	}
	err = filepath.Walk(dir, func(p string, fi os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		if strings.HasPrefix(fi.Name(), ".tmp-") {
			t.Errorf("temporary file left: %s", p)
		}
		if p != dir && fi.Mode().Perm()&0o077 != 0 {
			t.Errorf("%s is readable by others: %v", p, fi.Mode())
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// The cache extends the loaded conversation on append, so a turn's next
// call reads only what it added; a Log with the cache off gives the same.
func TestLogCacheMatchesColdLoad(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s, err := content.NewFS(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	warm := &content.Log{Store: s}
	cold := &content.Log{Store: s, CacheBytes: -1}
	head := ""
	for i := range 50 {
		m := model.Message{Role: model.RoleTool, Content: strings.Repeat(string(rune('a'+i%26)), 100*i)}
		if head, err = warm.Append(ctx, "t", head, []model.Message{m}); err != nil {
			t.Fatal(err)
		}
		a, err := warm.Load(ctx, "t", head)
		if err != nil {
			t.Fatal(err)
		}
		b, err := cold.Load(ctx, "t", head)
		if err != nil {
			t.Fatal(err)
		}
		if len(a) != i+1 || len(b) != i+1 || a[i].Content != m.Content || b[i].Content != m.Content {
			t.Fatalf("step %d: warm %d cold %d messages", i, len(a), len(b))
		}
	}
}

func TestPreviewCutsAtRune(t *testing.T) {
	t.Parallel()
	s := strings.Repeat("é", content.PreviewBytes)
	p := content.Preview(s)
	if !strings.HasSuffix(p, "…") || len(p) > content.PreviewBytes+len("…") {
		t.Fatalf("preview of %d bytes", len(p))
	}
	if strings.ContainsRune(p, '\uFFFD') {
		t.Fatal("preview cut a rune")
	}
}

// TestAppendResolvedUsesGivenContent: a caller that holds the resolved
// messages extends the cache with them; nothing is read back.
func TestAppendResolvedUsesGivenContent(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s, err := content.NewFS(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	l := &content.Log{Store: s}
	h1, err := l.Append(ctx, "t", "", []model.Message{{Role: model.RoleUser, Content: "task"}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := l.Load(ctx, "t", h1); err != nil { // cached at h1
		t.Fatal(err)
	}
	// A reference to content that is not in the store: only the given
	// resolved form can supply it.
	ref := model.Message{Role: model.RoleTool, Content: "prev…", Ref: content.ID([]byte("never stored")), Size: 12}
	full := model.Message{Role: model.RoleTool, Content: "never stored"}
	h2, err := l.AppendResolved(ctx, "t", h1, []model.Message{ref}, []model.Message{full})
	if err != nil {
		t.Fatal(err)
	}
	msgs, err := l.Load(ctx, "t", h2)
	if err != nil || len(msgs) != 2 || msgs[1].Content != "never stored" {
		t.Fatalf("loaded %+v, %v", msgs, err)
	}
}
