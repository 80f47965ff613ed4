package metrics

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
)

func get(t *testing.T, url string) (int, string) {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, string(body)
}

// TestHandlerPprofOffByDefault: without pprof the listener serves
// /metrics and nothing under /debug/pprof/.
func TestHandlerPprofOffByDefault(t *testing.T) {
	t.Parallel()
	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector())
	srv := httptest.NewServer(Handler(reg, false))
	defer srv.Close()
	if code, body := get(t, srv.URL+"/metrics"); code != http.StatusOK || !strings.Contains(body, "go_goroutines") {
		t.Fatalf("/metrics: %d %.200s", code, body)
	}
	for _, p := range []string{"/debug/pprof/", "/debug/pprof/heap", "/debug/pprof/cmdline"} {
		if code, _ := get(t, srv.URL+p); code != http.StatusNotFound {
			t.Errorf("%s: status %d, want 404 with pprof off", p, code)
		}
	}
}

// TestHandlerPprofOn: with pprof the index and a heap profile are served
// beside /metrics.
func TestHandlerPprofOn(t *testing.T) {
	t.Parallel()
	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector())
	srv := httptest.NewServer(Handler(reg, true))
	defer srv.Close()
	if code, body := get(t, srv.URL+"/metrics"); code != http.StatusOK || !strings.Contains(body, "go_goroutines") {
		t.Fatalf("/metrics: %d %.200s", code, body)
	}
	if code, body := get(t, srv.URL+"/debug/pprof/"); code != http.StatusOK || !strings.Contains(body, "heap") {
		t.Errorf("/debug/pprof/: %d %.200s", code, body)
	}
	if code, body := get(t, srv.URL+"/debug/pprof/heap?debug=1"); code != http.StatusOK || !strings.Contains(body, "heap profile:") {
		t.Errorf("/debug/pprof/heap: %d %.200s", code, body)
	}
	if code, body := get(t, srv.URL+"/debug/pprof/goroutine?debug=1"); code != http.StatusOK || !strings.Contains(body, "goroutine profile:") {
		t.Errorf("/debug/pprof/goroutine: %d %.200s", code, body)
	}
}
