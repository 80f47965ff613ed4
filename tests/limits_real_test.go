package tests

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/wardenhq/warden/model"
	"github.com/wardenhq/warden/permission"
)

// TestRealWorkerLimits runs a bounded fork bomb, a memory bomb and two
// disk fillers (TMPDIR and the workspace) as allowed calls on the worker
// as a deployment starts it, with backend.local.limits set: each ends
// its call with a result that names the limit, while a second turn on
// the same worker keeps answering, and the worker's memory and the
// workspace's disk stay within bounds. The control: the same worker
// config with the limits off, where each attempt gets past the bound.
func TestRealWorkerLimits(t *testing.T) {
	const limits = "backend:\n  local:\n    limits: {processes: 128, memory: 256MiB, tmp: 64MiB, write: 256MiB}\n"
	const none = "backend:\n  local:\n    limits: {processes: 0, memory: 0, tmp: 0, write: 0}\n"
	for _, on := range []bool{true, false} {
		name, cfg := "limits_on", limits
		if !on {
			name, cfg = "limits_off", none
		}
		t.Run(name, func(t *testing.T) {
			w := startRealWorker(t, outside, false, cfg)
			m := modeRun{w: w, mode: permission.ModeDefault, rules: []string{"Bash(python3:*)", "Bash(echo:*)", "Bash(rm:*)"}}
			bombs := []struct {
				name, limit string
				input       map[string]any
				// past says the attempt got past the limit's bound.
				past func(r model.Message) bool
			}{
				{"fork bomb", "processes", pyCall("import time\nn=0\ntry:\n  for i in range(300):\n    if os.fork()==0:\n      time.sleep(20); os._exit(0)\n    n+=1\nexcept Exception as e: print('FORK-FAILED',type(e).__name__,e,flush=True)\nprint('FORKED',n,flush=True)\n"),
					func(r model.Message) bool { return strings.Contains(r.Content, "FORKED 300") }},
				{"memory bomb", "memory", pyCall("b=[]\nfor i in range(16):\n  b.append(bytearray(64<<20))\n  print('MIB',(i+1)*64,flush=True)\nprint('ALLOCATED'+'-ALL',flush=True)\n"),
					func(r model.Message) bool { return strings.Contains(r.Content, "ALLOCATED-ALL") }},
				{"tmp filler", "tmp", pyCall(fill("os.environ['TMPDIR']+'/fill'", 128<<20, "FILLED-TMP")),
					func(r model.Message) bool { return strings.Contains(r.Content, "FILLED-TMP") }},
				{"workspace filler", "write", pyCall(fill("'fill.bin'", 1<<30, "FILLED-WS")),
					func(r model.Message) bool { return strings.Contains(r.Content, "FILLED-WS") }},
			}
			var steps [][]attempt
			for _, b := range bombs {
				steps = append(steps, []attempt{{name: b.name, tool: "Bash", input: b.input}})
			}
			steps = append(steps, []attempt{{tool: "Bash", input: bash("rm -f fill.bin")}})
			// A second turn on the same worker answers meanwhile.
			aliveID, alive := m.start(t, "alive", "", func() [][]attempt {
				var s [][]attempt
				for i := range 8 {
					s = append(s, []attempt{{tool: "Bash", input: bash(fmt.Sprintf("echo alive-%d", i))}})
				}
				return s
			}()...)
			rs := m.turn(t, "bombs", "", 4*time.Minute, steps...)
			select {
			case r := <-alive:
				if r.err != nil {
					t.Fatalf("the second turn %s failed: %v", aliveID, r.err)
				}
				for i, res := range toolResults(r.res) {
					if !strings.Contains(res.Content, fmt.Sprintf("alive-%d", i)) {
						t.Errorf("the second turn's call %d: %.300s", i, res.Content)
					}
				}
			case <-time.After(2 * time.Minute):
				t.Fatalf("the second turn %s did not end while the bombs ran", aliveID)
			case <-w.exited:
				t.Fatalf("the worker died:\n%s", w.tail())
			}
			for i, b := range bombs {
				r := rs[i]
				switch {
				case on && b.past(r):
					t.Errorf("%s: got past limits.%s:\n%.1500s", b.name, b.limit, r.Content)
				case on && !strings.Contains(r.Content, b.limit):
					t.Errorf("%s: the result does not name limits.%s:\n%.1500s", b.name, b.limit, r.Content)
				case !on && !b.past(r):
					t.Errorf("%s: with the limits off it did not get past the bound, so the limit proves nothing:\n%.1500s", b.name, r.Content)
				default:
					t.Logf("%s (limits %v): %.300s", b.name, on, strings.ReplaceAll(r.Content, "\n", " | "))
				}
			}
			if rss := vmRSS(t, w.cmd.Process.Pid); rss > 1<<30 {
				t.Errorf("the worker's RSS is %d MiB after the bombs", rss>>20)
			}
			if fi, err := os.Stat(filepath.Join(w.ws, "fill.bin")); err == nil {
				t.Errorf("the workspace filler's file is still there (%d bytes)", fi.Size())
			}
		})
	}
}

// fill is python code that allocates size bytes on disk at the path the
// expression path gives and prints done (split, so that the command's
// text does not hold it).
func fill(path string, size int64, done string) string {
	return "fd=os.open(" + path + ",os.O_CREAT|os.O_WRONLY)\nos.posix_fallocate(fd,0," + strconv.FormatInt(size, 10) + ")\nprint('" + done[:3] + "'+'" + done[3:] + "',flush=True)\n"
}

// vmRSS is the resident set size of process pid, in bytes.
func vmRSS(t *testing.T, pid int) int64 {
	t.Helper()
	f, err := os.Open(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "VmRSS:"); ok {
			kb, _ := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
			return kb << 10
		}
	}
	t.Fatal("no VmRSS")
	return 0
}
