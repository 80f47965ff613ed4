package tests

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/wardenhq/warden/model"
	"github.com/wardenhq/warden/permission"
)

// procUse is what the worker process holds: its resident memory and its
// descriptors.
type procUse struct {
	rssKiB int64
	fds    int
}

func (u procUse) String() string { return fmt.Sprintf("RSS %d MiB, %d fds", u.rssKiB>>10, u.fds) }

// useOf reads /proc/PID/status and /proc/PID/fd.
func useOf(t *testing.T, pid int) procUse {
	t.Helper()
	st, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		t.Fatal(err)
	}
	var u procUse
	for _, l := range strings.Split(string(st), "\n") {
		if rest, ok := strings.CutPrefix(l, "VmRSS:"); ok {
			u.rssKiB, _ = strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 10, 64)
		}
	}
	fds, err := os.ReadDir(fmt.Sprintf("/proc/%d/fd", pid))
	if err != nil {
		t.Fatal(err)
	}
	u.fds = len(fds)
	return u
}

// sampler keeps the largest use of pid seen until stopped.
type sampler struct {
	mu   sync.Mutex
	peak procUse
	stop chan struct{}
	done chan struct{}
}

func sample(pid int) *sampler {
	s := &sampler{stop: make(chan struct{}), done: make(chan struct{})}
	go func() {
		defer close(s.done)
		for {
			st, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
			fds, ferr := os.ReadDir(fmt.Sprintf("/proc/%d/fd", pid))
			if err == nil && ferr == nil {
				var rss int64
				for _, l := range strings.Split(string(st), "\n") {
					if rest, ok := strings.CutPrefix(l, "VmRSS:"); ok {
						rss, _ = strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 10, 64)
					}
				}
				s.mu.Lock()
				s.peak.rssKiB, s.peak.fds = max(s.peak.rssKiB, rss), max(s.peak.fds, len(fds))
				s.mu.Unlock()
			}
			select {
			case <-s.stop:
				return
			case <-time.After(50 * time.Millisecond):
			}
		}
	}()
	return s
}

func (s *sampler) end() procUse {
	close(s.stop)
	<-s.done
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.peak
}

// connFlood opens n connections to the call's egress proxy, sending
// nothing on them, and holds them for hold seconds.
func connFlood(n, hold int) map[string]any {
	return pyCall(fmt.Sprintf(`import socket,time
px=os.environ['HTTP_PROXY'].rsplit('/',1)[-1]; h,p=px.split(':')
cs=[]; errs=0
for i in range(%d):
  try: cs.append(socket.create_connection((h,int(p)),timeout=5))
  except Exception as e: errs+=1
print('OPENED',len(cs),'ERRORS',errs,flush=True)
time.sleep(%d)
alive=0
for s in cs:
  s.setblocking(False)
  try:
    alive += 0 if s.recv(1)==b'' else 1
  except BlockingIOError: alive+=1
  except Exception: pass
print('STILL-OPEN',alive,flush=True)
`, n, hold))
}

// recordFlood asks the call's egress proxy for huge hosts huge times
// (900 KB names) and for n distinct hosts the policy does not name.
func recordFlood(huge, n int) map[string]any {
	return pyCall(fmt.Sprintf(`import socket
px=os.environ['HTTP_PROXY'].rsplit('/',1)[-1]; h,p=px.split(':')
got={}
def ask(host):
  try:
    s=socket.create_connection((h,int(p)),timeout=10)
    try:
      s.sendall(('CONNECT %%s:443 HTTP/1.1\r\nHost: x\r\n\r\n'%%host).encode())
      r=s.recv(64).decode('latin-1').split('\r\n')[0][:12]
    finally: s.close()
  except Exception as e: r=type(e).__name__
  got[r]=got.get(r,0)+1
big='x'*(900<<10)
for i in range(%d): ask(big+'%%d.invalid'%%i)
for i in range(%d): ask('h%%06d-'%%i+'y'*200+'.invalid')
print('ANSWERS',sorted(got.items()),flush=True)
`, huge, n))
}

// neighbour is a short call of a second turn on the same worker.
var neighbour = []attempt{{tool: "Bash", input: pyCall("print('NEIGHBOUR-' + 'ANSWERED', flush=True)\n")}}

// timedNeighbour runs the neighbour turn and returns how long it took.
func timedNeighbour(t *testing.T, m modeRun, label string) time.Duration {
	t.Helper()
	start := time.Now()
	rs := m.turn(t, label, "", 3*time.Minute, neighbour)
	d := time.Since(start)
	if !strings.Contains(rs[0].Content, "NEIGHBOUR-ANSWERED") {
		t.Errorf("the neighbour turn (%s) did not answer:\n%.1500s", label, rs[0].Content)
	}
	return d
}

// attackResult waits for the attack turn started as done and returns
// its one tool result.
func attackResult(t *testing.T, m modeRun, id string, done <-chan turnEnd) model.Message {
	t.Helper()
	var r turnEnd
	select {
	case <-m.w.exited:
		t.Fatalf("the worker died during the attack:\n%s", m.w.tail())
	case <-time.After(5 * time.Minute):
		t.Fatalf("attack turn %s did not end", id)
	case r = <-done:
	}
	if r.err != nil {
		t.Fatalf("attack turn %s: %v", id, r.err)
	}
	rs := toolResults(r.res)
	if len(rs) != 1 {
		t.Fatalf("attack turn %s: %d results", id, len(rs))
	}
	return rs[0]
}

// TestRealWorkerEgressFlood: a call granted the network to one host
// (which does not exist) floods its egress proxy, through the built
// worker: idle connections (400), then CONNECTs with 900 KB host names
// (40) and refusals to 3,000 distinct hosts. With the proxy's bounds
// (backend.local.network: connections 64, refusals 2000, the default
// header timeout) each flood is ended with a result naming the bound,
// the worker's descriptors and memory stay bounded, and a second turn
// on the same worker answers meanwhile. The control raises the bounds
// (connections, refusals, header and idle timeouts): the same floods
// run to their end, the connections holding a worker descriptor each
// while they last.
func TestRealWorkerEgressFlood(t *testing.T) {
	const conns, huge, refusals = 400, 40, 3000
	for _, raised := range []bool{false, true} {
		name, netCfg := "bounded", "{connections: 64, refusals: 2000}"
		if raised {
			name, netCfg = "bounds_raised", "{connections: 100000, refusals: 1000000, header_timeout: 10m, idle_timeout: 10m}"
		}
		t.Run(name, func(t *testing.T) {
			w := startRealWorker(t, outside, false, "backend:\n  local:\n    network: "+netCfg+"\n")
			pid := w.cmd.Process.Pid
			pol := sandboxPolicy(t, "network_for:\n  - {rule: \"Bash(python3:*)\", hosts: [\"registry.invalid\"]}\n")
			m := modeRun{w: w, mode: permission.ModeDefault, rules: []string{"Bash(python3:*)"}, sandbox: pol}
			timedNeighbour(t, m, "warm") // the sandbox's zygote started
			before := useOf(t, pid)
			quiet := timedNeighbour(t, m, "before")

			// The connection flood.
			s := sample(pid)
			id, done := m.start(t, "conn-flood", "", []attempt{{tool: "Bash", input: connFlood(conns, 6)}})
			deadline := time.Now().Add(60 * time.Second)
			for useOf(t, pid).fds < before.fds+32 && time.Now().Before(deadline) {
				time.Sleep(20 * time.Millisecond)
			}
			during := timedNeighbour(t, m, "during-conn-flood")
			r := attackResult(t, m, id, done)
			peak := s.end()
			after := useOf(t, pid)
			t.Logf("connection flood (%s): before %s; peak %s; after %s; neighbour %v quiet, %v during",
				name, before, peak, after, quiet.Round(time.Millisecond), during.Round(time.Millisecond))
			t.Logf("flood result: %.600s", r.Content)
			if !strings.Contains(r.Content, attemptMarker) {
				t.Errorf("the flood did not run:\n%.1500s", r.Content)
			}
			if !raised {
				if !strings.Contains(r.Content, "backend.local.network.connections") {
					t.Errorf("the flood was not ended by the connections bound:\n%.1500s", r.Content)
				}
				if peak.fds > before.fds+2*64+64 {
					t.Errorf("the worker held %d descriptors during the flood (%d before)", peak.fds, before.fds)
				}
			} else if !strings.Contains(r.Content, fmt.Sprintf("OPENED %d", conns)) || peak.fds < before.fds+conns {
				t.Errorf("control: the flood did not hold its %d connections (peak %s, before %s):\n%.1500s", conns, peak, before, r.Content)
			}

			// The record flood.
			s = sample(pid)
			id, done = m.start(t, "record-flood", "", []attempt{{tool: "Bash", input: recordFlood(huge, refusals)}})
			time.Sleep(2 * time.Second)
			during = timedNeighbour(t, m, "during-record-flood")
			r = attackResult(t, m, id, done)
			peak = s.end()
			after = useOf(t, pid)
			t.Logf("record flood (%s): before %s; peak %s; after %s; neighbour %v quiet, %v during; result %d bytes",
				name, before, peak, after, quiet.Round(time.Millisecond), during.Round(time.Millisecond), len(r.Content))
			t.Logf("flood result: %.1500s", r.Content)
			if !strings.Contains(r.Content, attemptMarker) {
				t.Errorf("the flood did not run:\n%.1500s", r.Content)
			}
			if grew := (peak.rssKiB - before.rssKiB) >> 10; grew > 256 {
				t.Errorf("the worker's RSS grew by %d MiB during the record flood", grew)
			}
			if len(r.Content) > 64<<10 {
				t.Errorf("the result the model reads is %d bytes", len(r.Content))
			}
			if !strings.Contains(r.Content, "more refusals to") {
				t.Errorf("the refusals not kept are not summarised:\n%.3000s", r.Content)
			}
			if !raised && !strings.Contains(r.Content, "backend.local.network.refusals") {
				t.Errorf("the flood was not ended by the refusals bound:\n%.3000s", r.Content)
			}
			if raised && !strings.Contains(r.Content, "ANSWERS") {
				t.Errorf("control: the flood did not run to its end:\n%.3000s", r.Content)
			}
		})
	}
}

// addHostAddr gives this machine the address cidr on a veth interface
// of the test's (root; the kernel here has no dummy interfaces),
// removed when the test ends.
func addHostAddr(t *testing.T, name, cidr string) {
	t.Helper()
	run := func(args ...string) {
		if out, err := exec.Command("ip", args...).CombinedOutput(); err != nil {
			t.Fatalf("ip %s: %v: %s", strings.Join(args, " "), err, bytes.TrimSpace(out))
		}
	}
	_ = exec.Command("ip", "link", "del", name).Run() // left by a killed run
	run("link", "add", name, "type", "veth", "peer", "name", name+"p")
	t.Cleanup(func() { _ = exec.Command("ip", "link", "del", name).Run() })
	run("addr", "add", cidr, "dev", name)
	run("link", "set", name+"p", "up")
	run("link", "set", name, "up")
}

// TestRealWorkerHostAddress: a call with network: true reaches for a
// service bound to all interfaces (0.0.0.0) through an address that is
// this machine's own and public (192.88.99.1, once the 6to4 relay
// anycast, on an interface of the test's): the egress proxy refuses it,
// saying why. The control turns off only that layer
// (backend.local.sandbox_off: [host_addresses], which the worker warns
// of at start): the same call reaches the service.
func TestRealWorkerHostAddress(t *testing.T) {
	const ip = "192.88.99.1"
	addHostAddr(t, "wdnself0", ip+"/32")
	srv := markerServer(t, "0.0.0.0:0", "SELF-SERVICE-REACHED")
	_, port, _ := strings.Cut(srv, "]:")
	if port == "" {
		_, port, _ = strings.Cut(srv, ":")
	}
	target := ip + ":" + port
	for _, off := range []bool{false, true} {
		name, extra := "layer_on", ""
		if off {
			name, extra = "host_addresses_off", "backend:\n  local:\n    sandbox_off: [host_addresses]\n"
		}
		t.Run(name, func(t *testing.T) {
			w := startRealWorker(t, outside, false, extra)
			warned := strings.Contains(w.stdout.String(), "WARNING: sandbox layer host_addresses is OFF")
			if warned != off {
				t.Errorf("layer off %v: the worker warned %v at start:\n%s", off, warned, w.tail())
			}
			m := modeRun{w: w, mode: permission.ModeDefault, rules: []string{"Bash(python3:*)"}, sandbox: sandboxPolicy(t, "network: true\n")}
			rs := m.turn(t, "host-address", "", 3*time.Minute, []attempt{{tool: "Bash", input: netProbe(target, "SELF-SERVICE-REACHED")}})
			t.Logf("%s: %.1200s", name, rs[0].Content)
			if !strings.Contains(rs[0].Content, attemptMarker) {
				t.Fatalf("the probe did not run:\n%.1500s", rs[0].Content)
			}
			if got := probeReached(rs[0], "SELF-SERVICE-REACHED"); got != off {
				t.Errorf("layer off %v: reached %s %v:\n%.1500s", off, target, got, rs[0].Content)
			}
			if !off && !strings.Contains(rs[0].Content, "an address of this machine itself") {
				t.Errorf("the refusal does not say why:\n%.1500s", rs[0].Content)
			}
		})
	}
}
