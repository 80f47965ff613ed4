// Package echoserver is a small MCP server the mcp package's tests run
// over stdio (as a program, testdata/echoserver) and over streamable HTTP
// (in process).
package echoserver

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// EchoIn is the input of echo and write_note. Its jsonschema tags use
// the MCP SDK's syntax (a plain description).
type EchoIn struct {
	Text string `json:"text" jsonschema:"the text to echo"`
}

// FailIn is the input of fail.
type FailIn struct {
	Reason string `json:"reason,omitempty" jsonschema:"why the call fails"`
}

// Info is what the info tool returns.
type Info struct {
	PID  int      `json:"pid"`
	Args []string `json:"args"`
	Env  string   `json:"env"`
	// Environ is the process's whole environment.
	Environ []string `json:"environ"`
	// Fetched is what a GET of each URL in $ECHO_FETCH (space-separated)
	// returned: the body's first line, or the error.
	Fetched map[string]string `json:"fetched,omitempty"`
}

// Pixel is the PNG the image tool returns (a 1x1 transparent pixel).
const Pixel = ("\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR\x00\x00\x00\x01\x00\x00\x00\x01\x08\x06\x00\x00\x00\x1f\x15\xc4\x89\x00\x00\x00\rIDATx\x9cc\x00\x01\x00\x00\x05\x00\x01\r\n-\xb4\x00\x00\x00\x00IEND\xaeB`\x82")

// New returns the server: echo (read-only, returns its text), fail
// (returns isError), write_note (not read-only, appends to notes and
// reports how many there are), image (read-only, returns a caption and a
// PNG) and info (read-only, the process id, arguments and $ECHO_ENV).
func New() *mcp.Server {
	s := mcp.NewServer(&mcp.Implementation{Name: "echo", Version: "v1.0.0"}, nil)
	mcp.AddTool(s, &mcp.Tool{Name: "echo", Description: "Echo the text back.", Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true}},
		func(_ context.Context, _ *mcp.CallToolRequest, in EchoIn) (*mcp.CallToolResult, any, error) {
			return text(in.Text), nil, nil
		})
	mcp.AddTool(s, &mcp.Tool{Name: "fail", Description: "Always fails.", Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true}},
		func(_ context.Context, _ *mcp.CallToolRequest, in FailIn) (*mcp.CallToolResult, any, error) {
			return nil, nil, errors.New("failed: " + in.Reason)
		})
	var (
		mu    sync.Mutex
		notes []string
	)
	mcp.AddTool(s, &mcp.Tool{Name: "write_note", Description: "Store a note."},
		func(_ context.Context, _ *mcp.CallToolRequest, in EchoIn) (*mcp.CallToolResult, any, error) {
			mu.Lock()
			defer mu.Unlock()
			notes = append(notes, in.Text)
			return text("noted: " + strings.Join(notes, ", ")), nil, nil
		})
	mcp.AddTool(s, &mcp.Tool{Name: "image", Description: "Return a picture.", Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true}},
		func(context.Context, *mcp.CallToolRequest, struct{}) (*mcp.CallToolResult, any, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{
				&mcp.TextContent{Text: "a pixel"},
				&mcp.ImageContent{MIMEType: "image/png", Data: []byte(Pixel)},
			}}, nil, nil
		})
	mcp.AddTool(s, &mcp.Tool{Name: "info", Description: "Describe the server process.", Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true}},
		func(context.Context, *mcp.CallToolRequest, struct{}) (*mcp.CallToolResult, any, error) {
			b, err := json.Marshal(Info{PID: os.Getpid(), Args: os.Args[1:], Env: os.Getenv("ECHO_ENV"), Environ: os.Environ(), Fetched: fetch(os.Getenv("ECHO_FETCH"))})
			if err != nil {
				return nil, nil, err
			}
			return text(string(b)), nil, nil
		})
	return s
}

// fetch GETs each of the space-separated urls (through the proxy the
// environment names, as any client would) and says what each returned.
func fetch(urls string) map[string]string {
	if urls == "" {
		return nil
	}
	out := map[string]string{}
	c := &http.Client{Timeout: 5 * time.Second}
	for _, u := range strings.Fields(urls) {
		resp, err := c.Get(u)
		if err != nil {
			out[u] = "error: " + err.Error()
			continue
		}
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
		resp.Body.Close()
		line, _, _ := strings.Cut(string(b), "\n")
		out[u] = resp.Status + ": " + line
	}
	return out
}

func text(s string) *mcp.CallToolResult {
	return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: s}}}
}
