package reduce

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/wardenhq/warden/middleware"
	"github.com/wardenhq/warden/middleware/middlewaretest"
	"github.com/wardenhq/warden/tools"
)

func frac(f float64) *float64 { return &f }

func TestCut(t *testing.T) {
	t.Parallel()
	digits := "0123456789abcdefghij" // 20 characters
	tests := []struct {
		name string
		s    string
		n    int
		head float64
		want string
	}{
		{"fits", digits, 20, 0.5, digits},
		{"no limit", digits, 0, 0.5, digits},
		{"half", digits, 10, 0.5, "01234\n\n[... 10 of 20 characters cut ...]\n\nfghij"},
		{"mostly head", digits, 10, 0.8, "01234567\n\n[... 10 of 20 characters cut ...]\n\nij"},
		{"tail only", digits, 4, 0, "[... 16 of 20 characters cut ...]\n\nghij"},
		{"head only", digits, 4, 1, "0123\n\n[... 16 of 20 characters cut ...]"},
		{"runes not bytes", "ééééééééé", 4, 0.5, "éé\n\n[... 5 of 9 characters cut ...]\n\néé"},
		{"multibyte fits", "éééé", 4, 0.5, "éééé"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := Cut(tc.s, tc.n, tc.head); got != tc.want {
				t.Errorf("Cut = %q, want %q", got, tc.want)
			}
		})
	}
}

func TestReduceMiddleware(t *testing.T) {
	t.Parallel()
	long := strings.Repeat("a", 600) + strings.Repeat("m", 800) + strings.Repeat("z", 600) // 2000 chars
	split := []tools.Chunk{{Text: long[:700]}, {Text: long[700:1500], Metadata: map[string]any{"exit_code": 0}}, {Text: long[1500:]}}
	tests := []struct {
		name      string
		cfg       map[string]Config
		tool      middlewaretest.Tool
		wantText  string
		wantError bool
		wantMeta  map[string]any
		wantData  int
		wantN     int // chunks the middleware yields
	}{
		{
			name:     "default half and half",
			cfg:      map[string]Config{Default: {MaxChars: 1000}},
			tool:     middlewaretest.Tool{Name: "Bash", Chunks: split},
			wantText: strings.Repeat("a", 500) + "\n\n[... 1000 of 2000 characters cut ...]\n\n" + strings.Repeat("z", 500),
			wantMeta: map[string]any{"exit_code": 0}, wantN: 1,
		},
		{
			name:     "per tool head fraction",
			cfg:      map[string]Config{Default: {MaxChars: 1000}, "Bash": {MaxChars: 100, HeadFraction: frac(0.2)}},
			tool:     middlewaretest.Tool{Name: "Bash", Chunks: split},
			wantText: strings.Repeat("a", 20) + "\n\n[... 1900 of 2000 characters cut ...]\n\n" + strings.Repeat("z", 80),
			wantMeta: map[string]any{"exit_code": 0}, wantN: 1,
		},
		{
			name:     "error flag and data kept",
			cfg:      map[string]Config{"Bash": {MaxChars: 10}},
			tool:     middlewaretest.Tool{Name: "Bash", Chunks: []tools.Chunk{{Text: strings.Repeat("x", 30)}, {Text: "boom", IsError: true, Data: []tools.DataBlock{{MediaType: "image/png", Data: []byte{1}}}}}},
			wantText: "xxxxx\n\n[... 24 of 34 characters cut ...]\n\nxboom", wantError: true, wantData: 1, wantN: 1,
		},
		{
			name:     "short output merged unchanged",
			cfg:      map[string]Config{Default: {MaxChars: 1000}},
			tool:     middlewaretest.Tool{Name: "Read", Chunks: []tools.Chunk{{Text: "one "}, {Text: "two"}}},
			wantText: "one two", wantN: 1,
		},
		{
			name:     "tool without settings passes through",
			cfg:      map[string]Config{"Bash": {MaxChars: 10}},
			tool:     middlewaretest.Tool{Name: "Read", Chunks: split},
			wantText: long, wantMeta: map[string]any{"exit_code": 0}, wantN: 3,
		},
		{
			name:     "zero config passes through",
			cfg:      nil,
			tool:     middlewaretest.Tool{Name: "Read", Chunks: split},
			wantText: long, wantMeta: map[string]any{"exit_code": 0}, wantN: 3,
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			mw, err := ByTool(tc.cfg)
			if err != nil {
				t.Fatal(err)
			}
			var got []tools.Chunk
			for ch, err := range mw(middleware.Terminal)(context.Background(), middleware.Call{Tool: tc.tool}) {
				if err != nil {
					t.Fatal(err)
				}
				got = append(got, ch)
			}
			if len(got) != tc.wantN {
				t.Errorf("chunks = %d, want %d", len(got), tc.wantN)
			}
			var res tools.Result
			for _, ch := range got {
				res.Append(ch)
			}
			if res.Content != tc.wantText {
				t.Errorf("text = %q\nwant %q", res.Content, tc.wantText)
			}
			if res.IsError != tc.wantError || len(res.Data) != tc.wantData {
				t.Errorf("IsError, data = %v, %d; want %v, %d", res.IsError, len(res.Data), tc.wantError, tc.wantData)
			}
			if len(res.Metadata) != len(tc.wantMeta) || (tc.wantMeta != nil && res.Metadata["exit_code"] != tc.wantMeta["exit_code"]) {
				t.Errorf("metadata = %v, want %v", res.Metadata, tc.wantMeta)
			}
		})
	}
}

func TestReducePassesErrors(t *testing.T) {
	t.Parallel()
	mw, err := New(Config{MaxChars: 5})
	if err != nil {
		t.Fatal(err)
	}
	boom := errors.New("backend down")
	_, err = middlewaretest.Run(context.Background(), mw, middleware.Call{Tool: middlewaretest.Tool{Name: "Bash", Chunks: []tools.Chunk{{Text: "partial output"}}, Err: boom}})
	if !errors.Is(err, boom) {
		t.Errorf("err = %v, want %v", err, boom)
	}
	// An empty stream stays empty.
	n := 0
	for range mw(middleware.Terminal)(context.Background(), middleware.Call{Tool: middlewaretest.Tool{Name: "Bash"}}) {
		n++
	}
	if n != 0 {
		t.Errorf("empty stream yielded %d chunks", n)
	}
}

func TestNewValidates(t *testing.T) {
	t.Parallel()
	for _, cfg := range []Config{{MaxChars: -1}, {MaxChars: 10, HeadFraction: frac(1.5)}, {MaxChars: 10, HeadFraction: frac(-0.1)}} {
		if _, err := New(cfg); err == nil {
			t.Errorf("New(%+v) accepted", cfg)
		}
	}
	if _, err := New(Config{}); err != nil {
		t.Errorf("zero config: %v", err)
	}
}
