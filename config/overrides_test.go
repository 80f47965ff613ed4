package config

import (
	"os"
	"path/filepath"
	"slices"
	"testing"
)

func TestOverridesPrecedence(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "warden.yaml")
	yaml := "server:\n  port: 7300\n  namespace: file-ns\n  data_dir: " + dir + "\nworker:\n  task_queue: file-q\n" +
		"temporal:\n  api_key: file-key\n  key_file: file.key\nmetrics:\n  addr: 127.0.0.1:1\n"
	if err := os.WriteFile(file, []byte(yaml), 0o600); err != nil {
		t.Fatal(err)
	}
	env := FromEnv(envMap{
		"TEMPORAL_NAMESPACE": "env-ns", "TEMPORAL_API_KEY": "env-key", "WARDEN_KEY_FILE": "env.key",
		"WARDEN_WEBHOOK_SECRET": "env-secret", "TEMPORAL_ADDRESS": "env:7233",
	}.get)
	uiOff, inbox := 0, true
	flags := Overrides{Namespace: "flag-ns", Port: 7400, UIPort: &uiOff, Inbox: &inbox, Backend: "docker", KeyFile: "flag.key"}
	c, err := Resolve(file, env, flags)
	if err != nil {
		t.Fatal(err)
	}
	for _, g := range []struct{ name, got, want string }{
		{"namespace (flag over env over file)", c.Server.Namespace + "," + c.Temporal.Namespace, "flag-ns,flag-ns"},
		{"api key (env over file)", c.Temporal.APIKey, "env-key"},
		{"key file (flag over env over file)", c.Temporal.KeyFile, "flag.key"},
		{"task queue (file)", c.Worker.TaskQueue, "file-q"},
		{"metrics (file)", c.Metrics.Addr, "127.0.0.1:1"},
		{"secret (env)", c.Notify.Secret, "env-secret"},
		{"address (env)", c.Temporal.Address, "env:7233"},
		{"backend (flag)", c.Backend.Default, "docker"},
	} {
		if g.got != g.want {
			t.Errorf("%s: %q, want %q", g.name, g.got, g.want)
		}
	}
	if c.Server.Port != 7400 || c.Server.UIPort != 0 || !c.Inbox.Enabled || !c.Backend.Docker.Enabled {
		t.Errorf("port %d, ui port %d, inbox %v, docker %v", c.Server.Port, c.Server.UIPort, c.Inbox.Enabled, c.Backend.Docker.Enabled)
	}
	// Unset pointer and zero fields leave the file's values.
	c, err = Resolve(file, Overrides{}, Overrides{})
	if err != nil {
		t.Fatal(err)
	}
	if c.Server.UIPort != 8233 || c.Inbox.Enabled || c.Server.Namespace != "file-ns" || c.Temporal.APIKey != "file-key" {
		t.Errorf("zero overrides changed the config: %+v", c)
	}
	if _, err := Resolve(file, Overrides{}, Overrides{Backend: "nope"}); err == nil {
		t.Error("an unknown backend passed validation")
	}
}

// TestResolveClient: a client's address is where it dials, not a cluster
// it joins: the namespace and the operator key stay the embedded server's.
func TestResolveClient(t *testing.T) {
	t.Setenv("WARDEN_KEY_FILE", "")
	dir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, "auth"), 0o700); err != nil {
		t.Fatal(err)
	}
	op := filepath.Join(dir, "auth", "operator.key")
	if err := os.WriteFile(op, []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(dir, "warden.yaml")
	if err := os.WriteFile(file, []byte("server:\n  namespace: ns\n  port: 7301\n  data_dir: "+dir+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	env := FromEnv(envMap{"TEMPORAL_ADDRESS": "env:7233"}.get)
	c, addr, err := ResolveClient(file, env, Overrides{})
	if err != nil {
		t.Fatal(err)
	}
	if addr != "env:7233" || c.Temporal.Address != "" || c.Namespace() != "ns" || c.Temporal.KeyFile != op {
		t.Errorf("address %q, temporal.address %q, namespace %q, key file %q", addr, c.Temporal.Address, c.Namespace(), c.Temporal.KeyFile)
	}
	if c.Frontend(addr) != "env:7233" {
		t.Errorf("frontend %q", c.Frontend(addr))
	}
	c, addr, err = ResolveClient(file, env, Overrides{Address: "flag:7233"})
	if err != nil || addr != "flag:7233" {
		t.Errorf("flag address: %q, %v", addr, err)
	}
	c, addr, _ = ResolveClient(file, Overrides{}, Overrides{})
	if addr != "" || c.Frontend(addr) != "127.0.0.1:7301" {
		t.Errorf("default frontend %q (address %q)", c.Frontend(addr), addr)
	}
	c.Temporal.Address, c.Temporal.KeyFile = "cluster:7233", ""
	if c.Frontend("") != "cluster:7233" {
		t.Errorf("frontend with temporal.address: %q", c.Frontend(""))
	}
}

type envMap map[string]string

func (m envMap) get(k string) string { return m[k] }

func TestInboxPublicURL(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		in   Inbox
		want string
	}{
		{Inbox{Listen: "127.0.0.1:8234"}, "http://127.0.0.1:8234"},
		{Inbox{Listen: "h:1", TLSCert: "c"}, "https://h:1"},
		{Inbox{Listen: "h:1", URL: "https://inbox.example"}, "https://inbox.example"},
	} {
		if got := c.in.PublicURL(); got != c.want {
			t.Errorf("%+v: %q, want %q", c.in, got, c.want)
		}
	}
}

// TestResolvedOwnPaths: the worker's own paths are those it runs with,
// after the environment and the flags (a --data-dir, WARDEN_KEY_FILE's
// file, a TLS key given by flag), not the file's: the file's data
// directory, replaced by the flag, is not among them.
func TestResolvedOwnPaths(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "cfg.yaml")
	fileData := filepath.Join(dir, "file-data")
	if err := os.WriteFile(file, []byte("server:\n  data_dir: "+fileData+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	data, key, tlsKey := filepath.Join(dir, "srv", "data"), filepath.Join(dir, "keys", "worker.key"), filepath.Join(dir, "tls.key")
	env := FromEnv(envMap{"WARDEN_KEY_FILE": key}.get)
	c, err := Resolve(file, env, Overrides{DataDir: data, TLSKey: tlsKey, TLSCert: filepath.Join(dir, "tls.crt")})
	if err != nil {
		t.Fatal(err)
	}
	own := c.OwnPaths()
	for _, want := range []string{data, filepath.Join(data, "content"), key, tlsKey, file} {
		if !slices.Contains(own, want) {
			t.Errorf("own paths %q lack %s", own, want)
		}
	}
	if slices.Contains(own, fileData) {
		t.Errorf("own paths %q still hold the file's data dir %s, which the flag replaced", own, fileData)
	}
	pc, err := c.Policy().Context()
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{data + "{,/**}", key, file} {
		if !slices.Contains(pc.Protected, want) || !slices.Contains(c.OwnPatterns(), want) {
			t.Errorf("protected %q lack %s", pc.Protected, want)
		}
	}
	// A field set after Resolve (or a config built in code) counts too:
	// nothing is cached.
	c.Server.DataDir = filepath.Join(dir, "later")
	if own := c.OwnPaths(); !slices.Contains(own, c.Server.DataDir) || slices.Contains(own, data) {
		t.Errorf("own paths %q after data_dir changed to %s", own, c.Server.DataDir)
	}
}

// TestOwnPathsOfConfigInCode: a config built in code (node.Run's
// callers) names its own paths, WARDEN_KEY_FILE's and
// WARDEN_INBOX_KEY_FILE's files included.
func TestOwnPathsOfConfigInCode(t *testing.T) {
	dir := t.TempDir()
	t.Setenv("WARDEN_KEY_FILE", filepath.Join(dir, "op.key"))
	t.Setenv("WARDEN_INBOX_KEY_FILE", filepath.Join(dir, "inbox.key"))
	c := Default()
	c.Server.DataDir = filepath.Join(dir, "d")
	c.Inbox.TLSKey = filepath.Join(dir, "inbox-tls.key")
	c.Content.Dir = filepath.Join(dir, "content")
	own := c.OwnPaths()
	for _, want := range []string{c.Server.DataDir, c.Content.Dir, filepath.Join(dir, "op.key"), filepath.Join(dir, "inbox.key"), c.Inbox.TLSKey} {
		if !slices.Contains(own, want) {
			t.Errorf("own paths %q lack %s", own, want)
		}
	}
	if c.File() != "" {
		t.Errorf("File() = %q for a config built in code", c.File())
	}
}
