// Package mcp exposes the tools of MCP (Model Context Protocol) servers
// as warden tools. Connect starts (stdio) or reaches (streamable HTTP)
// each configured server, lists its tools and wraps each one as a tool
// named mcp__<server>__<tool>.
//
// Following AgentScope's MCPTool, a tool is read-only when the server
// annotates it with readOnlyHint, is never concurrency-safe, and its own
// permission check allows read-only tools and asks (a non-safety ASK,
// which allow rules such as "mcp__server__tool" override) for the rest.
package mcp

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"slices"
	"strings"
	"sync"
	"syscall"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/wardenhq/warden/backend"
	"github.com/wardenhq/warden/backend/local/egress"
	"github.com/wardenhq/warden/backend/local/sandbox"
	"github.com/wardenhq/warden/config"
	"github.com/wardenhq/warden/permission"
	"github.com/wardenhq/warden/tools"
)

// AskMessage is the message of the ASK a tool that is not read-only
// returns from its own permission check.
const AskMessage = "MCP tools must be explicitly allowed by the user."

// Prefix starts the name of every MCP tool.
const Prefix = "mcp__"

// Sandbox runs stdio servers in the local kernel sandbox (package
// backend/local/sandbox): Workdir is writable, Hide is empty to them.
type Sandbox struct {
	Workdir string
	Hide    []string
}

// ToolName is the warden name of tool on server: mcp__<server>__<tool>,
// with every character outside [A-Za-z0-9_-] replaced by '_'.
func ToolName(server, tool string) string {
	return Prefix + sanitize(server) + "__" + sanitize(tool)
}

func sanitize(s string) string {
	return strings.Map(func(r rune) rune {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '_', r == '-':
			return r
		}
		return '_'
	}, s)
}

// Set is a group of connected MCP servers and their tools. Its tools may
// be called concurrently; Close ends the sessions (and stops stdio
// servers).
type Set struct {
	servers []*server
	tools   []tools.Tool
}

// Connect connects to every server, in order, and lists its tools. If one
// fails, the servers already connected are closed and the error names it.
// Stdio servers run as the worker's user; use ConnectSandboxed to confine
// them.
func Connect(ctx context.Context, cfgs []config.MCPServer) (*Set, error) {
	return ConnectSandboxed(ctx, cfgs, nil)
}

// ConnectSandboxed is Connect with stdio servers started in the local
// sandbox sb (nil: unconfined).
func ConnectSandboxed(ctx context.Context, cfgs []config.MCPServer, sb *Sandbox) (*Set, error) {
	seen := map[string]bool{}
	for _, c := range cfgs {
		if err := c.Validate(); err != nil {
			return nil, err
		}
		if seen[c.Name] {
			return nil, fmt.Errorf("mcp: duplicate server %q", c.Name)
		}
		seen[c.Name] = true
	}
	s := &Set{}
	names := map[string]string{}
	for _, c := range cfgs {
		srv := newServer(c)
		srv.sandbox = sb
		s.servers = append(s.servers, srv)
		cs, err := srv.session(ctx)
		if err != nil {
			return nil, errors.Join(err, s.Close())
		}
		for t, err := range cs.Tools(ctx, nil) {
			if err != nil {
				return nil, errors.Join(fmt.Errorf("mcp: server %q: list tools: %w", c.Name, err), s.Close())
			}
			mt, err := newTool(srv, t)
			if err != nil {
				return nil, errors.Join(err, s.Close())
			}
			name := mt.info.Name
			if prev, dup := names[name]; dup {
				return nil, errors.Join(fmt.Errorf("mcp: tools %s and %s/%s both map to %q", prev, c.Name, t.Name, name), s.Close())
			}
			names[name] = c.Name + "/" + t.Name
			s.tools = append(s.tools, mt)
		}
	}
	return s, nil
}

// Tools returns the servers' tools, server by server in config order,
// each in the order its server listed them.
func (s *Set) Tools() []tools.Tool { return append([]tools.Tool(nil), s.tools...) }

// Close ends every session; calls made afterwards fail.
func (s *Set) Close() error {
	var errs []error
	for _, srv := range s.servers {
		errs = append(errs, srv.close())
	}
	return errors.Join(errs...)
}

// server holds the session with one MCP server and replaces it when the
// server dies.
type server struct {
	cfg    config.MCPServer
	client *sdk.Client

	mu sync.Mutex
	cs *sdk.ClientSession
	// sandbox, when set, confines a stdio server; tmp is its private
	// temporary directory, made at its first start and removed by close.
	sandbox *Sandbox
	tmp     string
	done    chan struct{} // closed when cs ends
	closed  bool
}

func newServer(cfg config.MCPServer) *server {
	return &server{cfg: cfg, client: sdk.NewClient(&sdk.Implementation{Name: "warden", Version: "v1"}, nil)}
}

// transport builds a fresh transport (an exec.Cmd runs once).
func (s *server) transport() sdk.Transport {
	if s.cfg.URL != "" {
		hc := &http.Client{Transport: headerTransport{headers: s.cfg.Headers, base: http.DefaultTransport}}
		return &sdk.StreamableClientTransport{Endpoint: s.cfg.URL, HTTPClient: hc, DisableStandaloneSSE: true}
	}
	env := backend.ToolEnv(os.Environ(), nil, s.cfg.Env)
	if sb := s.sandbox; sb != nil {
		if s.tmp == "" {
			tmp, err := os.MkdirTemp("", "warden-mcp-")
			if err != nil {
				return failedTransport{fmt.Errorf("mcp: server %q: temporary directory: %w", s.cfg.Name, err)}
			}
			s.tmp = tmp
		}
		tmp := s.tmp
		hide := append(slices.Clone(sb.Hide), "/run")
		// Beyond the shared roots it reads its program and, as a tool
		// does, the toolchains on its PATH under the home directory.
		read := append(sandbox.ProgramReads(s.cfg.Command, env), sandbox.HomeReads(env, hide)...)
		spec := sandbox.Spec{Write: append([]string{sb.Workdir, tmp}, s.cfg.Write...), Hide: hide, Read: read,
			Dir: sb.Workdir, Argv: append([]string{s.cfg.Command}, s.cfg.Args...)}
		env = append(env, "TMPDIR="+tmp)
		if !s.cfg.Network {
			cmd, err := sandbox.Command(context.Background(), spec, env)
			if err != nil {
				return failedTransport{fmt.Errorf("mcp: server %q: %w", s.cfg.Name, err)}
			}
			cmd.Stderr = os.Stderr
			cmd.SysProcAttr.Pdeathsig = syscall.SIGKILL
			return &sdk.CommandTransport{Command: cmd}
		}
		// With the network, as a tool call with it: a network namespace
		// of its own whose only way out is an egress proxy served for the
		// server's life, to any public host (never loopback or private
		// addresses: not the worker's frontend, inbox or metrics).
		cmd, recv, err := sandbox.CommandProxy(context.Background(), spec, egress.Env(env))
		if err != nil {
			return failedTransport{fmt.Errorf("mcp: server %q: %w", s.cfg.Name, err)}
		}
		cmd.Stderr = os.Stderr
		cmd.SysProcAttr.Pdeathsig = syscall.SIGKILL
		return &proxied{CommandTransport: sdk.CommandTransport{Command: cmd}, recv: recv,
			policy: egress.Policy{Hosts: []string{"*"}, By: "mcp.servers[" + s.cfg.Name + "].network"}}
	}
	cmd := exec.Command(s.cfg.Command, s.cfg.Args...)
	cmd.Env = env
	cmd.Stderr = os.Stderr
	// A session of its own, as a sandboxed server's: the worker's
	// terminal is not its controlling terminal.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	return &sdk.CommandTransport{Command: cmd}
}

// proxied is a stdio server's transport whose process's only way out is
// an egress proxy served on the listener it sends once started (recv),
// until the connection closes.
type proxied struct {
	sdk.CommandTransport
	recv   func() (net.Listener, error)
	policy egress.Policy
}

// Connect implements sdk.Transport: it starts the server and serves its
// proxy.
func (p *proxied) Connect(ctx context.Context) (sdk.Connection, error) {
	conn, err := p.CommandTransport.Connect(ctx)
	if err != nil {
		_, _ = p.recv() // closes the sockets
		return nil, err
	}
	ln, err := p.recv()
	if err != nil {
		_ = conn.Close()
		return nil, err
	}
	go egress.Serve(ln, p.policy, egress.Options{})
	return &proxiedConn{Connection: conn, ln: ln}, nil
}

// proxiedConn closes the server's proxy with the connection.
type proxiedConn struct {
	sdk.Connection
	ln net.Listener
}

// Close implements sdk.Connection.
func (c *proxiedConn) Close() error {
	err := c.Connection.Close()
	_ = c.ln.Close()
	return err
}

// failedTransport is a transport that could not be built.
type failedTransport struct{ err error }

// Connect implements sdk.Transport.
func (f failedTransport) Connect(context.Context) (sdk.Connection, error) { return nil, f.err }

// session returns the live session, connecting when there is none or the
// last one ended.
func (s *server) session(ctx context.Context) (*sdk.ClientSession, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil, fmt.Errorf("mcp: server %q: closed", s.cfg.Name)
	}
	if s.cs != nil {
		select {
		case <-s.done:
			_ = s.cs.Close()
			s.cs = nil
		default:
			return s.cs, nil
		}
	}
	cs, err := s.client.Connect(ctx, s.transport(), nil)
	if err != nil {
		return nil, fmt.Errorf("mcp: connect to server %q: %w", s.cfg.Name, err)
	}
	done := make(chan struct{})
	go func() {
		_ = cs.Wait()
		close(done)
	}()
	s.cs, s.done = cs, done
	return cs, nil
}

// drop forgets cs if it is still the current session, so the next
// session call reconnects.
func (s *server) drop(cs *sdk.ClientSession) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cs == cs {
		_ = s.cs.Close()
		s.cs = nil
	}
}

func (s *server) close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.closed = true
	if s.tmp != "" {
		defer os.RemoveAll(s.tmp)
	}
	if s.cs == nil {
		return nil
	}
	cs := s.cs
	s.cs = nil
	if err := cs.Close(); err != nil && !errors.Is(err, sdk.ErrConnectionClosed) {
		return fmt.Errorf("mcp: close server %q: %w", s.cfg.Name, err)
	}
	return nil
}

// call runs one tool call. When it fails other than by a protocol error
// the server answered (the server died, dropped the session or the
// connection broke), it reconnects once and retries; the retry's failure
// is returned as is.
func (s *server) call(ctx context.Context, p *sdk.CallToolParams) (*sdk.CallToolResult, error) {
	cs, err := s.session(ctx)
	if err != nil {
		return nil, err
	}
	res, err := cs.CallTool(ctx, p)
	if err == nil || ctx.Err() != nil || isProtocolError(err) {
		return res, err
	}
	s.drop(cs)
	if cs, err = s.session(ctx); err != nil {
		return nil, err
	}
	return cs.CallTool(ctx, p)
}

// isProtocolError reports an error response from the server (bad
// arguments, unknown tool): the connection is fine.
func isProtocolError(err error) bool {
	var rpc *jsonrpc.Error
	return errors.As(err, &rpc)
}

// headerTransport adds fixed headers to every request.
type headerTransport struct {
	headers map[string]string
	base    http.RoundTripper
}

func (h headerTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	if len(h.headers) > 0 {
		r = r.Clone(r.Context())
		for k, v := range h.headers {
			r.Header.Set(k, v)
		}
	}
	return h.base.RoundTrip(r)
}

// Tool is one MCP server tool as a warden tool.
type Tool struct {
	srv  *server
	name string // the server's name for the tool
	info tools.Info
}

func newTool(srv *server, t *sdk.Tool) (*Tool, error) {
	schema, err := inputSchema(t.InputSchema)
	if err != nil {
		return nil, fmt.Errorf("mcp: server %q: tool %q: %w", srv.cfg.Name, t.Name, err)
	}
	desc := t.Description
	if desc == "" {
		desc = t.Title
	}
	readOnly := t.Annotations != nil && t.Annotations.ReadOnlyHint
	return &Tool{srv: srv, name: t.Name, info: tools.Info{
		Name: ToolName(srv.cfg.Name, t.Name), Description: desc, InputSchema: schema,
		ReadOnly: readOnly, ConcurrencySafe: false,
	}}, nil
}

// inputSchema encodes the server's schema, without "$schema" (models
// reject it); a missing schema means an object with any properties.
func inputSchema(v any) (json.RawMessage, error) {
	m, ok := v.(map[string]any)
	if v == nil || (ok && len(m) == 0) {
		return json.RawMessage(`{"type":"object"}`), nil
	}
	if ok {
		if _, has := m["$schema"]; has {
			c := make(map[string]any, len(m))
			for k, x := range m {
				if k != "$schema" {
					c[k] = x
				}
			}
			v = c
		}
	}
	b, err := json.Marshal(v)
	if err != nil {
		return nil, fmt.Errorf("encode input schema: %w", err)
	}
	return b, nil
}

// Info implements tools.Tool.
func (t *Tool) Info() tools.Info { return t.info }

// Source implements tools.Sourcer: "mcp:" and the server's config name.
func (t *Tool) Source() string { return tools.SourceMCP + t.srv.cfg.Name }

// MCP returns the server's config name and the server's name for the
// tool.
func (t *Tool) MCP() (server, tool string) { return t.srv.cfg.Name, t.name }

// CheckPermissions implements tools.PermissionChecker: read-only tools
// are allowed, the others ask (not bypass-immune).
func (t *Tool) CheckPermissions(context.Context, *tools.Env, json.RawMessage, *permission.Context) (permission.Decision, error) {
	if t.info.ReadOnly {
		return permission.Decision{Behavior: permission.Allow}, nil
	}
	return permission.Decision{Behavior: permission.Ask, Message: AskMessage}, nil
}

// Call implements tools.Tool: it calls the tool on its server. The text
// blocks of the result are joined by newlines, images and audio become
// data blocks, and a result flagged isError becomes an error chunk. A
// protocol error the server answers (e.g. bad arguments) is an error
// chunk too; a transport failure is an infrastructure error, so the
// activity retries.
func (t *Tool) Call(ctx context.Context, _ *tools.Env, input json.RawMessage) tools.Stream {
	var args any = map[string]any{}
	if len(input) > 0 && string(input) != "null" {
		args = input
	}
	res, err := t.srv.call(ctx, &sdk.CallToolParams{Name: t.name, Arguments: args})
	if err != nil {
		var rpc *jsonrpc.Error
		if ctx.Err() == nil && errors.As(err, &rpc) {
			return tools.Errorf("Error: %s", rpc.Message)
		}
		return tools.Fail(fmt.Errorf("%s: %w", t.info.Name, err))
	}
	return tools.Single(chunk(res))
}

// chunk converts a call result.
func chunk(res *sdk.CallToolResult) tools.Chunk {
	var texts []string
	var c tools.Chunk
	for _, b := range res.Content {
		switch b := b.(type) {
		case *sdk.TextContent:
			texts = append(texts, b.Text)
		case *sdk.ImageContent:
			c.Data = append(c.Data, tools.DataBlock{MediaType: b.MIMEType, Data: b.Data})
		case *sdk.AudioContent:
			c.Data = append(c.Data, tools.DataBlock{MediaType: b.MIMEType, Data: b.Data})
		case *sdk.EmbeddedResource:
			if r := b.Resource; r != nil {
				switch {
				case r.Text != "":
					texts = append(texts, r.Text)
				case len(r.Blob) > 0:
					c.Data = append(c.Data, tools.DataBlock{MediaType: r.MIMEType, Data: r.Blob})
				}
			}
		case *sdk.ResourceLink:
			texts = append(texts, "Resource: "+b.URI)
		}
	}
	if len(texts) == 0 && res.StructuredContent != nil {
		if b, err := json.Marshal(res.StructuredContent); err == nil {
			texts = append(texts, string(b))
		}
	}
	c.Text = strings.Join(texts, "\n")
	c.IsError = res.IsError
	return c
}
