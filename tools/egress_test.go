package tools

import (
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"

	"github.com/wardenhq/warden/backend"
	"github.com/wardenhq/warden/backend/local"
	"github.com/wardenhq/warden/calls"
)

// TestBashNetworkNote: a sandboxed Bash call with the network, whose
// command reaches one host its profile names and one it does not, gets
// a result whose text has a "Network:" section naming the refused host,
// why, and what would allow it, and whose metadata lists every
// connection, through a JSON round trip (what the audit reads).
// Control: a call that is refused nothing has no such section.
func TestBashNetworkNote(t *testing.T) {
	ip := nonLoopback(t)
	named, other := serve(t, ip, "NAMED"), serve(t, ip, "OTHER")
	dir := t.TempDir()
	b := local.New(dir)
	defer b.Close()
	prof := &calls.Sandbox{Write: []string{dir}, Dirs: []string{dir}, Network: true,
		NetworkBy: "sandbox.network_for rule Bash(curl:*)", Hosts: []string{named}}
	env := &Env{Backend: b, Workdir: dir}
	call := func(cmd string) Result {
		in, _ := json.Marshal(BashInput{Command: cmd})
		r, err := Collect(Bash{}.Call(backend.WithSandbox(context.Background(), prof), env, in))
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("%s:\n%s", cmd, r.Content)
		return r
	}
	r := call("curl -sS http://" + named + "/ && curl -sS -p http://" + other + "/")
	text := r.Content
	want := "Network: the sandbox refused these connections:\n- warden: " + other +
		" is not among the hosts this call may reach (sandbox.network_for rule Bash(curl:*): hosts " + named +
		"); add it to the hosts of sandbox.network_for rule Bash(curl:*) to allow it\n" +
		"A command can ask for a host it needs with the input network_hosts: [\"host\"] (a person is asked).\n"
	if !strings.Contains(text, "NAMED") || !strings.HasSuffix(text, want) {
		t.Errorf("text:\n%s\nwant it to end with:\n%s", text, want)
	}
	md, err := json.Marshal(r.Metadata)
	if err != nil {
		t.Fatal(err)
	}
	var back struct{ Connections []calls.Connection }
	if err := json.Unmarshal(md, &back); err != nil {
		t.Fatal(err)
	}
	if len(back.Connections) != 2 || !back.Connections[0].Allowed || back.Connections[1].Allowed ||
		back.Connections[0].Received == 0 || back.Connections[1].Method != "CONNECT" {
		t.Errorf("metadata connections: %s", md)
	}
	if r := call("curl -sS http://" + named + "/"); strings.Contains(r.Content, "Network:") {
		t.Errorf("a call refused nothing has a Network section: %q", r.Content)
	}
	// A call that times out after a refusal (a client retrying) says so too.
	in, _ := json.Marshal(BashInput{Command: "curl -s http://" + other + "/ >/dev/null; curl -s http://" + other + "/ >/dev/null; sleep 30", Timeout: 1500})
	r, err = Collect(Bash{}.Call(backend.WithSandbox(context.Background(), prof), env, in))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(r.Content, "Command timed out") || !strings.Contains(r.Content, "to allow it (2 times)\n") || r.Metadata["connections"] == nil {
		t.Errorf("timed out call: %q %v", r.Content, r.Metadata)
	}
}

// nonLoopback is this machine's first non-loopback IPv4 address.
func nonLoopback(t *testing.T) string {
	addrs, err := net.InterfaceAddrs()
	if err != nil {
		t.Fatal(err)
	}
	for _, a := range addrs {
		if n, ok := a.(*net.IPNet); ok && n.IP.To4() != nil && !n.IP.IsLoopback() {
			return n.IP.String()
		}
	}
	t.Fatal("no non-loopback IPv4 address")
	return ""
}

// serve serves text over HTTP on ip until the test ends.
func serve(t *testing.T, ip, text string) string {
	ln, err := net.Listen("tcp", net.JoinHostPort(ip, "0"))
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { io.WriteString(w, text) })}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	return ln.Addr().String()
}

// TestNetworkNoteDropped: a result that could not keep every connection
// says how many it left out, in the text the model reads and in the
// metadata; control: a complete one says nothing of it.
func TestNetworkNoteDropped(t *testing.T) {
	res := backend.ExecResult{Connections: []calls.Connection{{Host: "evil.example", Port: 443, By: "warden: refused"}}, ConnectionsDropped: 7}
	if note := networkNote(res); !strings.Contains(note, "7 more connections were not recorded") {
		t.Errorf("note %q", note)
	}
	if md := withConnections(map[string]any{}, res); md["connections_dropped"] != 7 {
		t.Errorf("metadata %v", md)
	}
	res.ConnectionsDropped = 0
	if note := networkNote(res); strings.Contains(note, "not recorded") {
		t.Errorf("control: note %q", note)
	}
	if _, ok := withConnections(map[string]any{}, res)["connections_dropped"]; ok {
		t.Error("control: metadata counts drops")
	}
}

// TestNetworkNoteRequestRefused: a request the proxy refused by its
// method or path (recorded with its path) is listed without the hint to
// ask for the host with network_hosts, which would not allow it; a host
// refused keeps the hint.
func TestNetworkNoteRequestRefused(t *testing.T) {
	req := calls.Connection{Host: "api.example", Port: 443, Method: "POST", Path: "/x", By: "warden: POST api.example:443/x is refused: ..."}
	note := networkNote(backend.ExecResult{Connections: []calls.Connection{req}})
	if !strings.Contains(note, "POST api.example:443/x is refused") || strings.Contains(note, "network_hosts") {
		t.Errorf("request refused: %q", note)
	}
	host := calls.Connection{Host: "evil.example", Port: 443, Method: "CONNECT", By: "warden: refused"}
	if note := networkNote(backend.ExecResult{Connections: []calls.Connection{req, host}}); !strings.Contains(note, "network_hosts") {
		t.Errorf("host refused: %q", note)
	}
}
