package inbox

import (
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"

	"github.com/wardenhq/warden/client"
	"github.com/wardenhq/warden/config"
	"github.com/wardenhq/warden/metrics"
)

// signinFailures reads the counter from the registry, by method.
func signinFailures(t *testing.T, reg *prometheus.Registry) map[string]float64 {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]float64{}
	for _, mf := range mfs {
		if mf.GetName() != metrics.MetricInboxSigninFailures {
			continue
		}
		for _, m := range mf.GetMetric() {
			out[label(m, "method")] += m.GetCounter().GetValue()
		}
	}
	return out
}

func label(m *dto.Metric, name string) string {
	for _, l := range m.GetLabel() {
		if l.GetName() == name {
			return l.GetValue()
		}
	}
	return ""
}

// TestSigninFailuresCounted sends good and bad credentials of every kind
// to a real HTTP server and checks that only refused credentials count.
func TestSigninFailuresCounted(t *testing.T) {
	reg := prometheus.NewRegistry()
	s, err := New(Config{Client: client.New(nil, "unused"), Registerer: reg,
		Users: map[string]config.InboxUser{"alice": {Token: "tok-a", Password: "pw-a"}}})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(s)
	defer srv.Close()
	noRedirect := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	get := func(path string, set func(*http.Request)) int {
		t.Helper()
		req, err := http.NewRequest(http.MethodGet, srv.URL+path, nil)
		if err != nil {
			t.Fatal(err)
		}
		if set != nil {
			set(req)
		}
		resp, err := noRedirect.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	bearer := func(tok string) func(*http.Request) {
		return func(r *http.Request) { r.Header.Set("Authorization", "Bearer "+tok) }
	}
	steps := []struct {
		name string
		path string
		set  func(*http.Request)
		want int
	}{
		{"no credentials", "/", nil, http.StatusUnauthorized},
		{"good link", "/?token=tok-a", nil, http.StatusSeeOther},
		{"good bearer", "/static/app.css", bearer("tok-a"), http.StatusOK},
		{"good basic", "/static/app.css", func(r *http.Request) { r.SetBasicAuth("alice", "pw-a") }, http.StatusOK},
		{"bad link", "/?token=guess", nil, http.StatusUnauthorized},
		{"bad bearer", "/api/pending", bearer("guess"), http.StatusUnauthorized},
		{"bad bearer again", "/api/pending", bearer("guess2"), http.StatusUnauthorized},
		{"bad password", "/", func(r *http.Request) { r.SetBasicAuth("alice", "guess") }, http.StatusUnauthorized},
		{"unknown user", "/", func(r *http.Request) { r.SetBasicAuth("mallory", "pw-a") }, http.StatusUnauthorized},
		{"stale cookie", "/", func(r *http.Request) { r.AddCookie(&http.Cookie{Name: cookieName, Value: "old"}) }, http.StatusUnauthorized},
	}
	for _, st := range steps {
		code := get(st.path, st.set)
		if code != st.want {
			t.Errorf("%s: status %d, want %d", st.name, code, st.want)
		}
	}
	got := signinFailures(t, reg)
	want := map[string]float64{"link": 1, "bearer": 2, "basic": 2, "cookie": 1}
	if len(got) != len(want) {
		t.Errorf("failures = %v, want %v", got, want)
	}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("failures[%s] = %v, want %v (all: %v)", k, got[k], v, got)
		}
	}
}
