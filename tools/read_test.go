package tools

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/wardenhq/warden/backend/local"
)

// minimalPDF builds a PDF with one line of text per page.
func minimalPDF(pages int) []byte {
	var objs []string
	kids := make([]string, pages)
	for i := range pages {
		kids[i] = fmt.Sprintf("%d 0 R", 4+2*i)
	}
	objs = append(objs, "<< /Type /Catalog /Pages 2 0 R >>")
	objs = append(objs, fmt.Sprintf("<< /Type /Pages /Kids [%s] /Count %d >>", strings.Join(kids, " "), pages))
	objs = append(objs, "<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>")
	for i := range pages {
		stream := fmt.Sprintf("BT /F1 12 Tf 72 720 Td (Hello page %d) Tj ET", i+1)
		objs = append(objs, fmt.Sprintf("<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Resources << /Font << /F1 3 0 R >> >> /Contents %d 0 R >>", 5+2*i))
		objs = append(objs, fmt.Sprintf("<< /Length %d >>\nstream\n%s\nendstream", len(stream), stream))
	}
	var b bytes.Buffer
	b.WriteString("%PDF-1.4\n")
	offsets := make([]int, len(objs))
	for i, o := range objs {
		offsets[i] = b.Len()
		fmt.Fprintf(&b, "%d 0 obj\n%s\nendobj\n", i+1, o)
	}
	xref := b.Len()
	fmt.Fprintf(&b, "xref\n0 %d\n0000000000 65535 f \n", len(objs)+1)
	for _, off := range offsets {
		fmt.Fprintf(&b, "%010d 00000 n \n", off)
	}
	fmt.Fprintf(&b, "trailer\n<< /Size %d /Root 1 0 R >>\nstartxref\n%d\n%%%%EOF\n", len(objs)+1, xref)
	return b.Bytes()
}

func callTool(t *testing.T, tool Tool, env *Env, input any) Result {
	t.Helper()
	raw, err := json.Marshal(input)
	if err != nil {
		t.Fatal(err)
	}
	r, err := Collect(tool.Call(context.Background(), env, raw))
	if err != nil {
		t.Fatalf("%s: %v", tool.Info().Name, err)
	}
	return r
}

func TestRead(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	write := func(name string, data []byte) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, data, 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	var many strings.Builder
	for i := 1; i <= 3000; i++ {
		fmt.Fprintf(&many, "line %d\n", i)
	}
	text := write("a.txt", []byte("one\r\ntwo\rthree\n"+strings.Repeat("x", 2500)+"\n"))
	big := write("big.txt", []byte(many.String()))
	wide := write("wide.txt", []byte(strings.Repeat(strings.Repeat("w", 1500)+"\n", 400)))
	png := write("i.png", []byte("\x89PNG fake"))
	bmp := write("i.bmp", []byte("BM"))
	empty := write("empty.txt", nil)
	pdf5 := write("five.pdf", minimalPDF(5))
	pdf25 := write("many.pdf", minimalPDF(25))
	env := &Env{Backend: local.New(dir), Workdir: dir, State: &State{}}

	cases := []struct {
		name  string
		r     Read
		in    ReadInput
		want  []string
		isErr bool
	}{
		{"numbered", Read{}, ReadInput{FilePath: text}, []string{"     1\tone\n     2\ttwo\n     3\tthree\n     4\t" + strings.Repeat("x", 2000) + "[truncated]"}, false},
		{"offset limit", Read{}, ReadInput{FilePath: big, Offset: 2999, Limit: 5}, []string{"  2999\tline 2999\n  3000\tline 3000"}, false},
		{"default limit", Read{}, ReadInput{FilePath: big}, []string{"  2000\tline 2000"}, false},
		{"past end", Read{}, ReadInput{FilePath: big, Offset: 5000}, nil, false},
		{"max line", Read{MaxLineChars: 2}, ReadInput{FilePath: text, Limit: 1}, []string{"     1\ton[truncated]"}, false},
		{"size cap", Read{}, ReadInput{FilePath: wide}, []string{"[Output truncated at 262144 bytes: showing lines 1-173 of 400. Use offset=174 to read more.]"}, false},
		{"empty", Read{}, ReadInput{FilePath: empty}, []string{"exists but is empty"}, false},
		{"image", Read{}, ReadInput{FilePath: png}, []string{"image/png"}, false},
		{"bmp", Read{}, ReadInput{FilePath: bmp}, []string{"Unsupported image format .bmp"}, true},
		{"pdf", Read{}, ReadInput{FilePath: pdf5}, []string{"--- Page 1/5 ---\nHello page 1", "--- Page 5/5 ---\nHello page 5"}, false},
		{"pdf range", Read{}, ReadInput{FilePath: pdf25, Pages: "21-22"}, []string{"--- Page 21/25 ---\nHello page 21\n\n--- Page 22/25 ---\nHello page 22"}, false},
		{"pdf needs pages", Read{}, ReadInput{FilePath: pdf25}, []string{"has 25 pages"}, true},
		{"pdf too many", Read{}, ReadInput{FilePath: pdf25, Pages: "1-21"}, []string{"at most 20 pages"}, true},
		{"pdf bad pages", Read{}, ReadInput{FilePath: pdf5, Pages: "x"}, []string{"invalid pages"}, true},
		{"relative", Read{}, ReadInput{FilePath: "a.txt"}, []string{"Error: file_path must be an absolute path, got: a.txt"}, true},
		{"missing", Read{}, ReadInput{FilePath: dir + "/nope"}, []string{"Error: File does not exist: " + dir + "/nope"}, true},
		{"dir", Read{}, ReadInput{FilePath: dir}, []string{"Error: Path is a directory, not a file: " + dir}, true},
		{"nul", Read{}, ReadInput{FilePath: dir + "/a\x00b"}, []string{"NUL"}, true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := callTool(t, c.r, env, c.in)
			if r.IsError != c.isErr {
				t.Fatalf("IsError = %v: %s", r.IsError, r.Content)
			}
			for _, w := range c.want {
				if !strings.Contains(r.Content, w) {
					t.Errorf("content lacks %q:\n%.600s", w, r.Content)
				}
			}
			if c.want == nil && r.Content != "" {
				t.Errorf("want empty content, got %.200q", r.Content)
			}
		})
	}
	if r := callTool(t, Read{}, env, ReadInput{FilePath: png}); len(r.Data) != 1 || r.Data[0].MediaType != "image/png" || string(r.Data[0].Data) != "\x89PNG fake" {
		t.Errorf("image data %+v", r.Data)
	}
	if _, ok := env.State.Reads[text]; !ok {
		t.Errorf("Read did not record %s: %v", text, env.State.Reads)
	}
	// A nil State is fine and records nothing.
	if r := callTool(t, Read{}, &Env{Backend: local.New(dir)}, ReadInput{FilePath: text}); r.IsError {
		t.Errorf("nil state: %s", r.Content)
	}
}

func TestWriteEdit(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	env := &Env{Backend: local.New(dir), Workdir: dir, State: &State{}}
	p := filepath.Join(dir, "new", "f.txt")
	read := func() { callTool(t, Read{}, env, ReadInput{FilePath: p}) }
	type step struct {
		name   string
		before func()
		tool   Tool
		in     any
		want   string
		isErr  bool
		result string // file content afterwards, when set
	}
	steps := []step{
		{"create", nil, Write{}, WriteInput{p, "a\nb\na\n"}, "The file " + p + " has been written successfully (4 lines).", false, "a\nb\na\n"},
		{"overwrite unread", nil, Write{}, WriteInput{p, "x"}, "Error: File " + p + " exists but has not been read yet. You must read the file first before writing to it.", true, "a\nb\na\n"},
		{"edit unread", nil, Edit{}, EditInput{FilePath: p, OldString: "b", NewString: "c"}, "Error: To edit a file, you must first read it using the Read tool.", true, ""},
		{"not unique", read, Edit{}, EditInput{FilePath: p, OldString: "a", NewString: "c"}, "Error: old_string appears 2 times in " + p + ". Set replace_all=true to replace all occurrences, or make old_string more specific.", true, ""},
		{"not found", nil, Edit{}, EditInput{FilePath: p, OldString: "zzz", NewString: "c"}, "Error: old_string not found in " + p, true, ""},
		{"no-op", nil, Edit{}, EditInput{FilePath: p, OldString: "a", NewString: "a"}, "Error: old_string and new_string are identical. No changes to make.", true, ""},
		{"empty old", nil, Edit{}, EditInput{FilePath: p, OldString: "", NewString: "a"}, "must not be empty", true, ""},
		{"replace all", nil, Edit{}, EditInput{FilePath: p, OldString: "a", NewString: "z", ReplaceAll: true}, "Successfully replaced all 2 occurrences in " + p, false, "z\nb\nz\n"},
		{"stale after edit", nil, Edit{}, EditInput{FilePath: p, OldString: "b", NewString: "c"}, "you must first read it", true, ""},
		{"unique", read, Edit{}, EditInput{FilePath: p, OldString: "b", NewString: "c"}, "Successfully replaced 1 occurrence in " + p, false, "z\nc\nz\n"},
		{"edit missing", nil, Edit{}, EditInput{FilePath: p + ".nope", OldString: "b", NewString: "c"}, "Error: File not found: " + p + ".nope", true, ""},
		{"write relative", nil, Write{}, WriteInput{"rel.txt", "x"}, "must be an absolute path", true, ""},
		{"overwrite read", read, Write{}, WriteInput{p, "fresh"}, "(1 lines)", false, "fresh"},
	}
	for _, s := range steps {
		if s.before != nil {
			s.before()
		}
		r := callTool(t, s.tool, env, s.in)
		if r.IsError != s.isErr || !strings.Contains(r.Content, s.want) {
			t.Errorf("%s: got error=%v %q, want %q", s.name, r.IsError, r.Content, s.want)
		}
		if s.result != "" {
			if got, _ := os.ReadFile(p); string(got) != s.result {
				t.Errorf("%s: file is %q, want %q", s.name, got, s.result)
			}
		}
	}
	// CRLF files keep CRLF.
	crlf := filepath.Join(dir, "crlf.txt")
	os.WriteFile(crlf, []byte("one\r\ntwo\r\n"), 0o644)
	callTool(t, Read{}, env, ReadInput{FilePath: crlf})
	if r := callTool(t, Edit{}, env, EditInput{FilePath: crlf, OldString: "one\ntwo", NewString: "1\n2"}); r.IsError {
		t.Fatal(r.Content)
	}
	if got, _ := os.ReadFile(crlf); string(got) != "1\r\n2\r\n" {
		t.Errorf("crlf file is %q", got)
	}
	// Nil state: existing files cannot be overwritten, new ones can.
	nilEnv := &Env{Backend: local.New(dir)}
	if r := callTool(t, Write{}, nilEnv, WriteInput{p, "x"}); !r.IsError {
		t.Errorf("nil state overwrite succeeded")
	}
	if r := callTool(t, Write{}, nilEnv, WriteInput{filepath.Join(dir, "brand-new"), "x"}); r.IsError {
		t.Errorf("nil state create: %s", r.Content)
	}
}

func TestUnifiedDiff(t *testing.T) {
	t.Parallel()
	cases := []struct{ a, b, want string }{
		{"", "x\ny\n", "--- a\n+++ b\n@@ -0,0 +1,2 @@\n+x\n+y\n"},
		{"1\n2\n3\n4\n5\n6\n7\n8\n9\n", "1\n2\n3\n4\nFIVE\n6\n7\n8\n9\n", "--- a\n+++ b\n@@ -2,7 +2,7 @@\n 2\n 3\n 4\n-5\n+FIVE\n 6\n 7\n 8\n"},
		{"a\nb\n", "a\n", "--- a\n+++ b\n@@ -1,2 +1 @@\n a\n-b\n"},
		{"same\n", "same\n", ""},
	}
	for _, c := range cases {
		if got := unifiedDiff("a", "b", c.a, c.b); got != c.want {
			t.Errorf("diff(%q, %q) =\n%s\nwant\n%s", c.a, c.b, got, c.want)
		}
	}
	// Two distant changes make two hunks.
	var a, b strings.Builder
	for i := range 30 {
		fmt.Fprintf(&a, "%d\n", i)
		if i == 2 || i == 25 {
			fmt.Fprintf(&b, "changed %d\n", i)
		} else {
			fmt.Fprintf(&b, "%d\n", i)
		}
	}
	if got := unifiedDiff("a", "b", a.String(), b.String()); strings.Count(got, "@@ -") != 2 {
		t.Errorf("want 2 hunks:\n%s", got)
	}
}
