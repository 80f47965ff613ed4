package local

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/wardenhq/warden/calls"
)

// benchTree makes a workspace of about files files: directories ten
// wide, nine files each, nested as deep as needed, a .env in every
// hundredth directory and a .vscode in every five hundredth, and a git
// repository at the root.
func benchTree(b *testing.B, files int) string {
	b.Helper()
	root, err := filepath.EvalSymlinks(b.TempDir())
	if err != nil {
		b.Fatal(err)
	}
	if out, err := exec.Command("git", "init", "-q", root).CombinedOutput(); err != nil {
		b.Fatalf("git init: %v %s", err, out)
	}
	n, dirs := 0, 0
	queue := []string{root}
	for n < files {
		d := queue[0]
		queue = queue[1:]
		if err := os.MkdirAll(d, 0o755); err != nil {
			b.Fatal(err)
		}
		for i := 0; i < 9 && n < files; i++ {
			if err := os.WriteFile(filepath.Join(d, fmt.Sprintf("f%d.go", i)), nil, 0o644); err != nil {
				b.Fatal(err)
			}
			n++
		}
		dirs++
		if dirs%100 == 0 {
			_ = os.WriteFile(filepath.Join(d, ".env"), []byte("K=v\n"), 0o600)
		}
		if dirs%500 == 0 {
			_ = os.MkdirAll(filepath.Join(d, ".vscode"), 0o755)
		}
		for i := 0; i < 10; i++ {
			queue = append(queue, filepath.Join(d, fmt.Sprintf("d%d", i)))
		}
	}
	return root
}

// BenchmarkGuard measures the guard's cost per call on workspaces of
// 10,000 and 100,000 files: cold (a new index: the first call in a
// workspace), warm (nothing changed since the last call: before and
// after the call), warm without inotify (polled), and warm after a call
// created a file.
func BenchmarkGuard(b *testing.B) {
	for _, files := range []int{10_000, 100_000} {
		ws := benchTree(b, files)
		prof := &calls.Sandbox{Write: []string{ws}, Dirs: []string{ws}}
		b.Run(fmt.Sprintf("files=%d/cold", files), func(b *testing.B) {
			for i := 0; i < b.N; i++ {
				be := &Backend{Workdir: ws}
				if _, _, _, _, err := be.guard(prof, []string{ws}, nil); err != nil {
					b.Fatal(err)
				}
				_ = be.Close()
			}
		})
		for _, git := range []bool{false, true} {
			b.Run(fmt.Sprintf("files=%d/warm/git=%v", files, git), func(b *testing.B) {
				be := &Backend{Workdir: ws}
				defer be.Close()
				p := *prof
				p.Git = git
				hide, _, prot, g, err := be.guard(&p, []string{ws}, nil)
				if err != nil {
					b.Fatal(err)
				}
				if _, err := g.check(); err != nil {
					b.Fatal(err)
				}
				b.ResetTimer()
				for i := 0; i < b.N; i++ {
					_, _, _, g, err = be.guard(&p, []string{ws}, nil)
					if err != nil {
						b.Fatal(err)
					}
					if _, err := g.check(); err != nil {
						b.Fatal(err)
					}
				}
				b.ReportMetric(float64(len(hide)), "hidden")
				b.ReportMetric(float64(len(prot)), "protected")
			})
		}
		b.Run(fmt.Sprintf("files=%d/warm/polled", files), func(b *testing.B) {
			// Without inotify: every directory's times are checked.
			be := &Backend{Workdir: ws}
			defer be.Close()
			be.guardIndex().close()
			if _, _, _, g, err := be.guard(prof, []string{ws}, nil); err != nil {
				b.Fatal(err)
			} else if _, err := g.check(); err != nil {
				b.Fatal(err)
			}
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				_, _, _, g, err := be.guard(prof, []string{ws}, nil)
				if err != nil {
					b.Fatal(err)
				}
				if _, err := g.check(); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run(fmt.Sprintf("files=%d/warm-changed", files), func(b *testing.B) {
			be := &Backend{Workdir: ws}
			defer be.Close()
			if _, _, _, g, err := be.guard(prof, []string{ws}, nil); err != nil {
				b.Fatal(err)
			} else if _, err := g.check(); err != nil {
				b.Fatal(err)
			}
			f := filepath.Join(ws, "d3", "d4", "new.go")
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				// What a call did: a file created (or removed).
				if i%2 == 0 {
					_ = os.WriteFile(f, nil, 0o644)
				} else {
					_ = os.Remove(f)
				}
				_, _, _, g, err := be.guard(prof, []string{ws}, nil)
				if err != nil {
					b.Fatal(err)
				}
				if _, err := g.check(); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
