// Package docker runs tools inside a long-lived Docker container, the
// workspace, through the Docker Engine API.
//
// A [Backend] owns (or attaches to) one container labelled
// warden.workspace=<id>. Processes run as API execs; files move through the
// archive API. When the container disappears or stops (removed by hand, a
// daemon restart), the next call finds or recreates it and retries once.
// With [Config.Session] set, `/bin/sh -c CMD` runs are fed to one
// persistent shell per workspace instead of a fresh exec each.
package docker

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"maps"
	"path/filepath"
	"strings"
	"sync"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/moby/moby/api/types/container"
	"github.com/moby/moby/client"

	"github.com/wardenhq/warden/backend"
)

// Labels warden puts on every container it creates.
const (
	// LabelManaged marks containers created by warden; [Cleanup] removes them.
	LabelManaged = "warden.managed"
	// LabelWorkspace holds the workspace ID a container belongs to.
	LabelWorkspace = "warden.workspace"
)

// Config describes the workspace container. The zero value is not usable:
// Image is required.
type Config struct {
	// Image is the image the workspace container runs (required).
	Image string
	// Workdir is the default working directory; empty means /workspace.
	Workdir string
	// Mounts are bind mounts as "host:container" or "host:container:ro".
	// A mount whose host path is one of Own, holds one or lies inside
	// one is refused (New fails, naming both).
	Mounts []string
	// Own are the worker's own host paths (data directory, key files,
	// config file: config.Config.OwnPaths), which no mount may expose to
	// the container.
	Own []string
	// Env holds KEY=VALUE entries for the container environment.
	Env []string
	// ExecEnv holds resolved backend.env entries (NAME=value, see
	// backend.ResolveEnv) added to the environment of every process
	// warden starts in the container, also in a reused container. The
	// worker's own environment never reaches the container: a process
	// sees the image's environment, Env, ExecEnv and the request's
	// entries, in that order.
	ExecEnv []string
	// User runs the container and its processes ("uid", "uid:gid" or a
	// name); empty means the image's user. With a non-root user, file
	// operations go through execs as that user so permissions apply.
	User string
	// NanoCPUs limits CPU in units of 1e-9 CPUs; zero means no limit.
	NanoCPUs int64
	// Memory limits memory in bytes; zero means no limit.
	Memory int64
	// PidsLimit limits the number of processes; zero means no limit.
	PidsLimit int64
	// Network is the network mode; empty means "none".
	Network string
	// Name is the container name; empty lets Docker choose.
	Name string
	// WorkspaceID identifies the workspace; a container labelled with it is
	// reused. Empty means a fresh random ID.
	WorkspaceID string
	// Labels are extra container labels.
	Labels map[string]string
	// Session runs `/bin/sh -c CMD` execs on a persistent shell, which is
	// much cheaper than a fresh exec per command.
	Session bool
	// Client is the Engine API client to use; nil means one built from the
	// environment (DOCKER_HOST and friends) with API version negotiation.
	Client *client.Client
}

// Backend is a workspace container. It is safe for concurrent use.
type Backend struct {
	cli     *client.Client
	ownsCli bool
	cfg     Config

	mu      sync.Mutex // guards id, created, home
	id      string
	created bool // this Backend created the container (Close removes it)
	home    string

	sessMu sync.Mutex // serialises commands on sess
	sess   *session

	// afterHeader, for tests only, runs when a session command's result
	// header has been read, before its output is.
	afterHeader func()
}

var _ backend.Backend = (*Backend)(nil)

// NewClient returns an Engine API client configured from the environment,
// with its API version negotiated against the daemon.
func NewClient(ctx context.Context) (*client.Client, error) {
	cli, err := client.New(client.FromEnv)
	if err != nil {
		return nil, fmt.Errorf("docker client: %w", err)
	}
	if _, err := cli.Ping(ctx, client.PingOptions{NegotiateAPIVersion: true}); err != nil {
		_ = cli.Close()
		return nil, fmt.Errorf("docker ping: %w", err)
	}
	return cli, nil
}

// New connects to the daemon and finds the workspace container by its
// label, starting it if stopped, or creates and starts one.
func New(ctx context.Context, cfg Config) (*Backend, error) {
	if cfg.Image == "" {
		return nil, errors.New("docker: Config.Image is required")
	}
	if err := CheckMounts(cfg.Mounts, cfg.Own); err != nil {
		return nil, err
	}
	if cfg.Workdir == "" {
		cfg.Workdir = "/workspace"
	}
	if cfg.Network == "" {
		cfg.Network = "none"
	}
	if cfg.WorkspaceID == "" {
		cfg.WorkspaceID = "ws-" + nonce()[:16]
	}
	b := &Backend{cli: cfg.Client, cfg: cfg}
	if b.cli == nil {
		cli, err := NewClient(ctx)
		if err != nil {
			return nil, err
		}
		b.cli, b.ownsCli = cli, true
	}
	if _, err := b.ensure(ctx, ""); err != nil {
		if b.ownsCli {
			_ = b.cli.Close()
		}
		return nil, err
	}
	return b, nil
}

// CheckMounts refuses a bind mount ("host:container[:opts]") whose host
// path, links resolved, is one of the own paths, holds one (mounting a
// project mounts its ./.warden: keys and database, writable) or lies
// inside one. A source that is not a path (a named volume) is not
// checked.
func CheckMounts(mounts, own []string) error {
	real := func(p string) string {
		p = filepath.Clean(p)
		if r, err := filepath.EvalSymlinks(p); err == nil {
			return r
		}
		return p
	}
	inside := func(p, dir string) bool {
		return p == dir || dir == "/" || strings.HasPrefix(p, dir+"/")
	}
	for _, m := range mounts {
		src, _, _ := strings.Cut(m, ":")
		if !strings.HasPrefix(src, "/") && !strings.HasPrefix(src, ".") && !strings.HasPrefix(src, "~") {
			continue // a named volume
		}
		abs, err := filepath.Abs(src)
		if err != nil {
			return fmt.Errorf("docker: mount %q: %w", m, err)
		}
		s := real(abs)
		for _, o := range own {
			if o == "" {
				continue
			}
			r := real(o)
			switch {
			case inside(r, s):
				return fmt.Errorf("docker: mount %q exposes the worker's own %s (its data directory, a key or its config) to the container: mount a directory that does not hold it, or move it out", m, o)
			case inside(s, r):
				return fmt.Errorf("docker: mount %q lies inside the worker's own %s (its data directory, a key or its config): no tool may see it", m, o)
			}
		}
	}
	return nil
}

// Name implements backend.Backend.
func (b *Backend) Name() string { return "docker" }

// ContainerID returns the ID of the current workspace container.
func (b *Backend) ContainerID() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.id
}

// WorkspaceID returns the workspace ID the container is labelled with.
func (b *Backend) WorkspaceID() string { return b.cfg.WorkspaceID }

// Client returns the Engine API client the backend uses.
func (b *Backend) Client() *client.Client { return b.cli }

// Close stops the session and removes the container if this Backend
// created it. A container it attached to is left running.
func (b *Backend) Close(ctx context.Context) error {
	b.sessMu.Lock()
	if b.sess != nil {
		b.sess.close()
		b.sess = nil
	}
	b.sessMu.Unlock()
	b.mu.Lock()
	id, created := b.id, b.created
	b.mu.Unlock()
	var err error
	if created && id != "" {
		_, err = b.cli.ContainerRemove(ctx, id, client.ContainerRemoveOptions{Force: true, RemoveVolumes: true})
		if err != nil && !cerrdefs.IsNotFound(err) {
			err = fmt.Errorf("docker remove %s: %w", short(id), err)
		} else {
			err = nil
		}
	}
	if b.ownsCli {
		err = errors.Join(err, b.cli.Close())
	}
	return err
}

// Cleanup removes every container warden created (label
// warden.managed=true) that also carries all the given labels.
func Cleanup(ctx context.Context, cli *client.Client, labels map[string]string) error {
	f := make(client.Filters).Add("label", LabelManaged+"=true")
	for k, v := range labels {
		f.Add("label", k+"="+v)
	}
	list, err := cli.ContainerList(ctx, client.ContainerListOptions{All: true, Filters: f})
	if err != nil {
		return fmt.Errorf("docker cleanup: list: %w", err)
	}
	var errs []error
	for _, c := range list.Items {
		_, err := cli.ContainerRemove(ctx, c.ID, client.ContainerRemoveOptions{Force: true, RemoveVolumes: true})
		if err != nil && !cerrdefs.IsNotFound(err) {
			errs = append(errs, fmt.Errorf("docker cleanup: remove %s: %w", short(c.ID), err))
		}
	}
	return errors.Join(errs...)
}

// current returns the container ID, finding or creating the container
// when there is none yet.
func (b *Backend) current(ctx context.Context) (string, error) {
	b.mu.Lock()
	id := b.id
	b.mu.Unlock()
	if id != "" {
		return id, nil
	}
	return b.ensure(ctx, "")
}

// ensure makes sure a running workspace container exists. stale, when not
// empty, is an ID that just failed: it is only replaced if it is still
// the current one (so concurrent failures recover once).
func (b *Backend) ensure(ctx context.Context, stale string) (string, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if stale != "" && b.id != stale && b.id != "" {
		return b.id, nil
	}
	b.home = ""
	f := make(client.Filters).Add("label", LabelWorkspace+"="+b.cfg.WorkspaceID)
	list, err := b.cli.ContainerList(ctx, client.ContainerListOptions{All: true, Filters: f})
	if err != nil {
		return "", fmt.Errorf("docker list: %w", err)
	}
	for _, c := range list.Items {
		switch c.State {
		case container.StateRemoving, container.StateDead:
			continue
		case container.StateRunning:
		case container.StatePaused:
			if _, err := b.cli.ContainerUnpause(ctx, c.ID, client.ContainerUnpauseOptions{}); err != nil {
				return "", fmt.Errorf("docker unpause %s: %w", short(c.ID), err)
			}
		default:
			if _, err := b.cli.ContainerStart(ctx, c.ID, client.ContainerStartOptions{}); err != nil {
				return "", fmt.Errorf("docker start %s: %w", short(c.ID), err)
			}
		}
		b.id = c.ID
		return c.ID, nil
	}
	id, err := b.create(ctx)
	if err != nil {
		return "", err
	}
	b.id, b.created = id, true
	return id, nil
}

func (b *Backend) create(ctx context.Context) (string, error) {
	labels := maps.Clone(b.cfg.Labels)
	if labels == nil {
		labels = map[string]string{}
	}
	labels[LabelManaged] = "true"
	labels[LabelWorkspace] = b.cfg.WorkspaceID
	init := true
	hc := &container.HostConfig{
		Binds:       b.cfg.Mounts,
		NetworkMode: container.NetworkMode(b.cfg.Network),
		Init:        &init,
	}
	hc.NanoCPUs = b.cfg.NanoCPUs
	hc.Memory = b.cfg.Memory
	if b.cfg.PidsLimit > 0 {
		hc.PidsLimit = &b.cfg.PidsLimit
	}
	res, err := b.cli.ContainerCreate(ctx, client.ContainerCreateOptions{
		Name: b.cfg.Name,
		Config: &container.Config{
			Image:      b.cfg.Image,
			Cmd:        []string{"sleep", "infinity"},
			WorkingDir: b.cfg.Workdir,
			Env:        b.cfg.Env,
			User:       b.cfg.User,
			Labels:     labels,
		},
		HostConfig: hc,
	})
	if err != nil {
		return "", fmt.Errorf("docker create (image %s): %w", b.cfg.Image, err)
	}
	if _, err := b.cli.ContainerStart(ctx, res.ID, client.ContainerStartOptions{}); err != nil {
		_, _ = b.cli.ContainerRemove(context.WithoutCancel(ctx), res.ID, client.ContainerRemoveOptions{Force: true})
		return "", fmt.Errorf("docker start %s: %w", short(res.ID), err)
	}
	return res.ID, nil
}

// retry runs op against the current container; if the container is gone
// or not running, it recovers the workspace and runs op once more.
func (b *Backend) retry(ctx context.Context, op func(id string) error) error {
	id, err := b.current(ctx)
	if err != nil {
		return err
	}
	err = op(id)
	if err == nil || !containerGone(err) || ctx.Err() != nil {
		return err
	}
	id, rerr := b.ensure(ctx, id)
	if rerr != nil {
		return errors.Join(err, rerr)
	}
	return op(id)
}

// errContainerGone marks an error the daemon gave without saying why
// (a HEAD request's 404) once the container is known to be gone.
var errContainerGone = errors.New("no such container")

// containerGone reports whether err says the container was removed or is
// not running, which recovery can fix.
func containerGone(err error) bool {
	if err == nil {
		return false
	}
	if errors.Is(err, errContainerGone) {
		return true
	}
	s := strings.ToLower(err.Error())
	return strings.Contains(s, "no such container") || strings.Contains(s, "is not running") ||
		strings.Contains(s, "is paused") || strings.Contains(s, "is restarting")
}

// isRoot reports whether processes run as root, judging by Config.User.
func (b *Backend) isRoot() bool {
	u, _, _ := strings.Cut(b.cfg.User, ":")
	return u == "" || u == "0" || u == "root"
}

func nonce() string {
	var buf [16]byte
	_, _ = rand.Read(buf[:])
	return hex.EncodeToString(buf[:])
}

func short(id string) string {
	if len(id) > 12 {
		return id[:12]
	}
	return id
}

// Workdir is the workspace directory inside the container.
func (b *Backend) Workdir() string {
	if b.cfg.Workdir == "" {
		return "/workspace"
	}
	return b.cfg.Workdir
}
