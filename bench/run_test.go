package bench

import (
	"context"
	"net"
	"os"
	"strings"
	"testing"
)

// TestRunDockerOnly: the docker scenario needs no Temporal connection;
// run alone, it fills in its report only (here: no daemon to reach). An
// unknown scenario is an error.
func TestRunDockerOnly(t *testing.T) {
	t.Setenv("DOCKER_HOST", "unix://"+t.TempDir()+"/no-docker.sock")
	var rep Report
	r := &Runner{}
	if err := r.Run(context.Background(), "docker", Plan{Docker: DockerConfig{Image: "img:1", Calls: 3}}, &rep); err != nil {
		t.Fatal(err)
	}
	if d := rep.Docker; d == nil || d.Image != "img:1" || d.Calls != 3 || d.Unavailable == "" {
		t.Fatalf("docker report = %+v", d)
	}
	if rep.Overhead != nil || rep.Throughput != nil || rep.Waiting != nil || rep.Long != nil {
		t.Errorf("other scenarios ran: %+v", rep)
	}
	if err := r.Run(context.Background(), "everything", Plan{}, &rep); err == nil || !strings.Contains(err.Error(), `"everything"`) {
		t.Errorf("unknown scenario: %v", err)
	}
}

func TestListenerPIDAt(t *testing.T) {
	if _, err := os.Stat("/proc/net/tcp"); err != nil {
		t.Skipf("no /proc (not Linux): %v", err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	if pid := ListenerPIDAt(ln.Addr().String()); pid != os.Getpid() {
		t.Errorf("ListenerPIDAt(%s) = %d, want %d", ln.Addr(), pid, os.Getpid())
	}
	for _, addr := range []string{"no-port", "localhost:http-alt"} {
		if pid := ListenerPIDAt(addr); pid != 0 {
			t.Errorf("ListenerPIDAt(%q) = %d, want 0", addr, pid)
		}
	}
}
