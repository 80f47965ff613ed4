package bench

import (
	"context"
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
