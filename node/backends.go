package node

import (
	"context"
	"fmt"
	"maps"
	"os"
	"slices"
	"strings"

	"github.com/wardenhq/warden/backend"
	"github.com/wardenhq/warden/backend/docker"
	"github.com/wardenhq/warden/backend/e2b"
	"github.com/wardenhq/warden/backend/local"
	"github.com/wardenhq/warden/backend/local/egress"
	"github.com/wardenhq/warden/backend/local/sandbox"
	"github.com/wardenhq/warden/config"
)

// backends builds the enabled non-local backends. The returned close
// function releases what they created (a Docker container this worker
// created is removed; an E2B sandbox is left to its keep-alive timeout so a
// restarted worker reconnects to it). hide is what the local backend hides from tools; own are the worker's
// own paths, which no Docker mount may expose; sensitive the policy's
// sensitive_paths, whose files the local backend hides inside a call's working directories.
func backends(ctx context.Context, cfg config.Backend, workdir string, hide, own, sensitive []string) (map[string]backend.Backend, func(), error) {
	env := backend.ResolveEnv(cfg.Env, os.Environ()) // backend.env: all that tools get beyond the allowlist
	limits, err := local.ConfigLimits(cfg.Local.Limits)
	if err != nil {
		return nil, func() {}, err
	}
	noShare, reserve, err := local.ConfigShares(cfg.Local.Limits)
	if err != nil {
		return nil, func() {}, err
	}
	lb := &local.Backend{Workdir: workdir, Env: env, Hide: hide, Sensitive: sensitive, Read: cfg.Local.Read, Unsandboxed: cfg.Local.SandboxOff(), Limits: limits,
		NoCPUShare: noShare, DiskReserve: reserve, NoGitGuard: cfg.Local.LayerOff("git_guard"), FileToolsOff: cfg.Local.LayerOff(local.FileToolsLayer),
		Off: cfg.Local.Off, GuardMaxDirs: cfg.Local.GuardMaxDirs}
	n := cfg.Local.Network
	lb.Network = egress.Limits{Conns: n.Connections, Refusals: n.Refusals, HeaderTimeout: n.HeaderTimeout, IdleTimeout: n.IdleTimeout}
	lb.NetworkShared = egress.NewShared(n.ConnectionsTotal, 0)
	lb.HostAddressesOff = cfg.Local.LayerOff("host_addresses")
	if !lb.Unsandboxed {
		if noShare {
			fmt.Fprintln(os.Stderr, "WARNING: backend.local.limits.cpu_share is off: a call's processes compete for the CPU one by one, and a fork bomb can starve the worker's heartbeats and every other call")
		}
		if reserve < 0 {
			fmt.Fprintln(os.Stderr, "WARNING: backend.local.limits.disk_reserve is off: a call can fill the disks it writes, the worker's data dir's included")
		}
	}
	out := map[string]backend.Backend{"local": lb}
	var closers []func()
	closers = append(closers, func() { _ = lb.Close() })
	if len(cfg.Secrets) > 0 {
		br, dir, err := broker(cfg.Secrets, os.Getenv)
		if err != nil {
			_ = lb.Close()
			return nil, func() {}, err
		}
		lb.Broker = br
		closers = append(closers, func() { _ = os.RemoveAll(dir) })
	}
	closeAll := func() {
		for _, c := range closers {
			c()
		}
	}
	if d := cfg.Docker; d.Enabled {
		b, err := docker.New(ctx, docker.Config{
			Image: d.Image, Workdir: d.Workdir, Mounts: d.Mounts, Env: d.Env, User: d.User, Network: d.Network,
			NanoCPUs: int64(d.CPUs * 1e9), Memory: d.MemoryMB << 20, PidsLimit: d.PidsLimit,
			WorkspaceID: d.WorkspaceID, Session: d.Session, ExecEnv: env, Own: own,
		})
		if err != nil {
			return nil, closeAll, fmt.Errorf("backend.docker: %w", err)
		}
		out["docker"] = b
		_, _ = b.Home(ctx) // resolved once here, so the permission check never execs for it
		if d.WorkspaceID == "" {
			closers = append(closers, func() { _ = b.Close(context.Background()) })
		}
	}
	if e := cfg.E2B; e.Enabled {
		b, err := e2b.New(ctx, e2b.Config{
			APIURL: e.APIURL, SandboxURL: e.SandboxURL, Domain: e.Domain, Template: e.Template,
			Workdir: e.Workdir, Timeout: e.Timeout, WorkspaceID: e.WorkspaceID, ExecEnv: env,
		})
		if err != nil {
			closeAll()
			return nil, func() {}, fmt.Errorf("backend.e2b: %w", err)
		}
		out["e2b"] = b
		_, _ = b.Home(ctx) // resolved once here, so the permission check never execs for it
	}
	return out, closeAll, nil
}

// checkSandbox says what protects local tool processes, and refuses to
// go on when the kernel cannot sandbox them and the configuration did not
// turn the sandbox off explicitly.
func checkSandbox(cfg config.Backend) (string, error) {
	if cfg.Local.SandboxOff() {
		return "OFF (backend.local.sandbox: off): local tools run as the worker's user, with its files and network", nil
	}
	abi, err := sandbox.Check()
	if err != nil {
		return "", fmt.Errorf("the local backend cannot sandbox tool processes here (%w); set backend.local.sandbox: off to run them unconfined as the worker's user", err)
	}
	return sandbox.Describe(abi), nil
}

// broker makes the broker of backend.secrets, their values read through
// getenv, and the directory of its CA bundle, which the caller removes
// when the worker stops.
func broker(secrets map[string]config.Secret, getenv func(string) string) (*egress.Broker, string, error) {
	var list []egress.Secret
	for _, name := range slices.Sorted(maps.Keys(secrets)) {
		s := secrets[name]
		v := getenv(s.FromEnv)
		if v == "" {
			return nil, "", fmt.Errorf("backend.secrets.%s: the worker's environment has no %s", name, s.FromEnv)
		}
		list = append(list, egress.Secret{Name: name, Value: v, Hosts: s.Hosts, Header: s.Header, Format: s.Format})
	}
	dir, err := os.MkdirTemp("", "warden-broker-")
	if err != nil {
		return nil, "", fmt.Errorf("backend.secrets: %w", err)
	}
	if err := os.Chmod(dir, 0o755); err != nil {
		_ = os.RemoveAll(dir)
		return nil, "", fmt.Errorf("backend.secrets: %w", err)
	}
	// The bundle extends the worker's own roots (SSL_CERT_FILE, when it
	// names a file; else the system's).
	br, err := egress.NewBroker(egress.BrokerConfig{Secrets: list, Dir: dir})
	if err != nil {
		_ = os.RemoveAll(dir)
		return nil, "", fmt.Errorf("backend.secrets: %w", err)
	}
	return br, dir, nil
}

// secretsLine says which secrets the worker brokers and for which hosts
// (names only, never a value); "" for none.
func secretsLine(secrets map[string]config.Secret) string {
	var out []string
	for _, name := range slices.Sorted(maps.Keys(secrets)) {
		out = append(out, name+" brokered for "+strings.Join(secrets[name].Hosts, ", "))
	}
	return strings.Join(out, "; ")
}
