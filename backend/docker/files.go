package docker

import (
	"archive/tar"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"path"
	"sort"
	"strconv"
	"strings"
	"time"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/moby/moby/api/types/container"
	"github.com/moby/moby/client"

	"github.com/wardenhq/warden/backend"
)

// File access: as root, files move through the archive API (no process is
// started). With a non-root Config.User the archive API would bypass file
// permissions (the daemon writes as root), so files go through execs of
// cat as that user instead.

// ReadFile implements backend.Backend.
func (b *Backend) ReadFile(ctx context.Context, p string) ([]byte, error) {
	if !path.IsAbs(p) {
		return nil, fmt.Errorf("docker read %s: path is not absolute", p)
	}
	if !b.isRoot() {
		return b.readExec(ctx, p)
	}
	var data []byte
	err := b.retry(ctx, func(id string) error {
		var err error
		data, err = b.readArchive(ctx, id, path.Clean(p), 0)
		return err
	})
	return data, err
}

func (b *Backend) readArchive(ctx context.Context, id, p string, depth int) ([]byte, error) {
	res, err := b.cli.CopyFromContainer(ctx, id, client.CopyFromContainerOptions{SourcePath: p})
	if err != nil {
		return nil, wrapNotFound("docker read "+p, err)
	}
	defer res.Content.Close()
	tr := tar.NewReader(res.Content)
	hdr, err := tr.Next()
	if err != nil {
		return nil, fmt.Errorf("docker read %s: archive: %w", p, err)
	}
	switch hdr.Typeflag {
	case tar.TypeReg:
		data := make([]byte, 0, hdr.Size)
		buf := bytes.NewBuffer(data)
		if _, err := io.Copy(buf, tr); err != nil {
			return nil, fmt.Errorf("docker read %s: archive: %w", p, err)
		}
		return buf.Bytes(), nil
	case tar.TypeSymlink:
		if depth >= 16 {
			return nil, fmt.Errorf("docker read %s: too many levels of symbolic links", p)
		}
		target := hdr.Linkname
		if !path.IsAbs(target) {
			target = path.Join(path.Dir(p), target)
		}
		return b.readArchive(ctx, id, target, depth+1)
	case tar.TypeDir:
		return nil, fmt.Errorf("docker read %s: is a directory", p)
	default:
		return nil, fmt.Errorf("docker read %s: not a regular file", p)
	}
}

// WriteFile implements backend.Backend. An existing file keeps its
// permission bits; a new one gets 0644. Parent directories are created.
func (b *Backend) WriteFile(ctx context.Context, p string, data []byte) error {
	if !path.IsAbs(p) {
		return fmt.Errorf("docker write %s: path is not absolute", p)
	}
	p = path.Clean(p)
	if !b.isRoot() {
		return b.writeExec(ctx, p, data)
	}
	return b.retry(ctx, func(id string) error { return b.writeArchive(ctx, id, p, data) })
}

func (b *Backend) writeArchive(ctx context.Context, id, p string, data []byte) error {
	mode := int64(0o644)
	st, err := b.cli.ContainerStatPath(ctx, id, client.ContainerStatPathOptions{Path: p})
	switch {
	case err == nil && st.Stat.Mode.IsDir():
		return fmt.Errorf("docker write %s: is a directory", p)
	case err == nil && st.Stat.Mode&fs.ModeSymlink != 0:
		// Write through the link, as os.WriteFile would.
		target := st.Stat.LinkTarget
		if !path.IsAbs(target) {
			target = path.Join(path.Dir(p), target)
		}
		if target != p {
			return b.writeArchive(ctx, id, target, data)
		}
	case err == nil:
		mode = int64(st.Stat.Mode.Perm())
	case !cerrdefs.IsNotFound(err) || containerGone(err):
		return fmt.Errorf("docker write %s: %w", p, err)
	}
	dir, name := path.Split(p)
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	now := time.Now()
	hdr := &tar.Header{Name: name, Mode: mode, Size: int64(len(data)), ModTime: now, Typeflag: tar.TypeReg, Format: tar.FormatPAX}
	if err := tw.WriteHeader(hdr); err != nil {
		return fmt.Errorf("docker write %s: %w", p, err)
	}
	if _, err := tw.Write(data); err != nil {
		return fmt.Errorf("docker write %s: %w", p, err)
	}
	if err := tw.Close(); err != nil {
		return fmt.Errorf("docker write %s: %w", p, err)
	}
	put := func() error {
		_, err := b.cli.CopyToContainer(ctx, id, client.CopyToContainerOptions{
			DestinationPath: dir,
			Content:         bytes.NewReader(buf.Bytes()),
		})
		return err
	}
	err = put()
	if err != nil && cerrdefs.IsNotFound(err) && !containerGone(err) {
		// The parent is missing: create it, then try again.
		res, xerr := b.plainExec(ctx, id, backend.ExecRequest{Argv: []string{"mkdir", "-p", "--", dir}, Dir: "/"})
		if xerr != nil {
			return fmt.Errorf("docker write %s: mkdir: %w", p, xerr)
		}
		if res.ExitCode != 0 {
			return fmt.Errorf("docker write %s: mkdir: %s", p, strings.TrimSpace(string(res.Stderr)))
		}
		err = put()
	}
	if err != nil {
		return fmt.Errorf("docker write %s: %w", p, err)
	}
	return nil
}

// Stat implements backend.Backend. Symbolic links are followed.
func (b *Backend) Stat(ctx context.Context, p string) (backend.FileInfo, error) {
	if !path.IsAbs(p) {
		return backend.FileInfo{}, fmt.Errorf("docker stat %s: path is not absolute", p)
	}
	p = path.Clean(p)
	if !b.isRoot() {
		return b.statExec(ctx, p)
	}
	var fi backend.FileInfo
	err := b.retry(ctx, func(id string) error {
		target := p
		for depth := 0; ; depth++ {
			st, err := b.cli.ContainerStatPath(ctx, id, client.ContainerStatPathOptions{Path: target})
			if err != nil {
				return b.statNotFound(ctx, id, "docker stat "+p, err)
			}
			if st.Stat.Mode&fs.ModeSymlink == 0 || st.Stat.LinkTarget == "" || depth >= 16 {
				fi = fromPathStat(path.Base(p), st.Stat)
				return nil
			}
			next := st.Stat.LinkTarget
			if !path.IsAbs(next) {
				next = path.Join(path.Dir(target), next)
			}
			if next == target {
				fi = fromPathStat(path.Base(p), st.Stat)
				return nil
			}
			target = next
		}
	})
	return fi, err
}

func fromPathStat(name string, st container.PathStat) backend.FileInfo {
	return backend.FileInfo{Name: name, Size: st.Size, ModTime: st.Mtime, IsDir: st.Mode.IsDir()}
}

// listScript prints, for each entry of directory $1 (dot files included),
// "SIZE MTIME TYPE\nNAME\0". Exit 3: missing; 4: not a directory.
const listScript = `[ -e "$1" ] || exit 3
[ -d "$1" ] || exit 4
cd -- "$1" || exit 5
for f in .* *; do
  case $f in .|..) continue ;; esac
  [ -e "$f" ] || [ -L "$f" ] || continue
  stat -L -c '%s %Y %F' -- "$f" 2>/dev/null || stat -c '%s %Y %F' -- "$f" || continue
  printf '%s\0' "$f"
done`

// ListDir implements backend.Backend. It runs one small shell script
// (busybox is enough) and sorts the entries by name.
func (b *Backend) ListDir(ctx context.Context, p string) ([]backend.FileInfo, error) {
	if !path.IsAbs(p) {
		return nil, fmt.Errorf("docker list %s: path is not absolute", p)
	}
	res, err := b.execReadOnly(ctx, backend.ExecRequest{Argv: []string{"/bin/sh", "-c", listScript, "warden-ls", p}, Dir: "/"})
	if err != nil {
		return nil, fmt.Errorf("docker list %s: %w", p, err)
	}
	switch res.ExitCode {
	case 0:
	case 3:
		return nil, fmt.Errorf("docker list %s: %w", p, backend.ErrNotExist)
	case 4:
		return nil, fmt.Errorf("docker list %s: not a directory", p)
	default:
		return nil, fmt.Errorf("docker list %s: exit %d: %s", p, res.ExitCode, strings.TrimSpace(string(res.Stderr)))
	}
	var out []backend.FileInfo
	for rec := range strings.SplitSeq(string(res.Stdout), "\x00") {
		if rec == "" {
			continue
		}
		head, name, ok := strings.Cut(rec, "\n")
		if !ok {
			return nil, fmt.Errorf("docker list %s: bad record %q", p, rec)
		}
		fi, err := parseStat(name, head)
		if err != nil {
			return nil, fmt.Errorf("docker list %s: %w", p, err)
		}
		out = append(out, fi)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, nil
}

// parseStat parses "SIZE MTIME TYPE" as printed by stat -c '%s %Y %F'.
func parseStat(name, line string) (backend.FileInfo, error) {
	f := strings.SplitN(line, " ", 3)
	if len(f) != 3 {
		return backend.FileInfo{}, fmt.Errorf("bad stat line %q", line)
	}
	size, err := strconv.ParseInt(f[0], 10, 64)
	if err != nil {
		return backend.FileInfo{}, fmt.Errorf("bad size in %q: %w", line, err)
	}
	sec, err := strconv.ParseInt(f[1], 10, 64)
	if err != nil {
		return backend.FileInfo{}, fmt.Errorf("bad mtime in %q: %w", line, err)
	}
	return backend.FileInfo{Name: name, Size: size, ModTime: time.Unix(sec, 0), IsDir: f[2] == "directory"}, nil
}

// Home implements backend.Backend: $HOME of the user processes run as.
func (b *Backend) Home(ctx context.Context) (string, error) {
	b.mu.Lock()
	h := b.home
	b.mu.Unlock()
	if h != "" {
		return h, nil
	}
	res, err := b.execReadOnly(ctx, backend.ExecRequest{Argv: []string{"/bin/sh", "-c", `printf %s "${HOME:-/}"`}, Dir: "/"})
	if err != nil {
		return "", fmt.Errorf("docker home: %w", err)
	}
	h = string(res.Stdout)
	if res.ExitCode != 0 || !path.IsAbs(h) {
		return "", fmt.Errorf("docker home: got %q (exit %d)", h, res.ExitCode)
	}
	b.mu.Lock()
	b.home = h
	b.mu.Unlock()
	return h, nil
}

// execReadOnly runs one of the backend's own read-only scripts, and runs
// it once more on the recovered workspace when the container was removed
// while it ran (its output went with the container; running it again
// changes nothing).
func (b *Backend) execReadOnly(ctx context.Context, req backend.ExecRequest) (backend.ExecResult, error) {
	res, err := b.Exec(ctx, req)
	if errors.Is(err, errContainerGone) && ctx.Err() == nil {
		return b.Exec(ctx, req)
	}
	return res, err
}

// Exec-based file access for non-root users.

const (
	readScript  = `[ -e "$1" ] || exit 3; [ -d "$1" ] && { echo "is a directory" >&2; exit 4; }; exec cat -- "$1"`
	writeScript = `[ -d "$1" ] && { echo "is a directory" >&2; exit 4; }; mkdir -p -- "$(dirname -- "$1")" && cat > "$1"`
	statScript  = `[ -e "$1" ] || exit 3; stat -L -c '%s %Y %F' -- "$1"`
)

func (b *Backend) readExec(ctx context.Context, p string) ([]byte, error) {
	res, err := b.execReadOnly(ctx, backend.ExecRequest{Argv: []string{"/bin/sh", "-c", readScript, "warden-read", p}, Dir: "/"})
	if err != nil {
		return nil, fmt.Errorf("docker read %s: %w", p, err)
	}
	if err := scriptErr("docker read "+p, res); err != nil {
		return nil, err
	}
	return res.Stdout, nil
}

func (b *Backend) writeExec(ctx context.Context, p string, data []byte) error {
	if data == nil {
		data = []byte{}
	}
	res, err := b.Exec(ctx, backend.ExecRequest{Argv: []string{"/bin/sh", "-c", writeScript, "warden-write", p}, Dir: "/", Stdin: data})
	if err != nil {
		return fmt.Errorf("docker write %s: %w", p, err)
	}
	return scriptErr("docker write "+p, res)
}

func (b *Backend) statExec(ctx context.Context, p string) (backend.FileInfo, error) {
	res, err := b.execReadOnly(ctx, backend.ExecRequest{Argv: []string{"/bin/sh", "-c", statScript, "warden-stat", p}, Dir: "/"})
	if err != nil {
		return backend.FileInfo{}, fmt.Errorf("docker stat %s: %w", p, err)
	}
	if err := scriptErr("docker stat "+p, res); err != nil {
		return backend.FileInfo{}, err
	}
	fi, err := parseStat(path.Base(p), strings.TrimRight(string(res.Stdout), "\n"))
	if err != nil {
		return backend.FileInfo{}, fmt.Errorf("docker stat %s: %w", p, err)
	}
	return fi, nil
}

func scriptErr(op string, res backend.ExecResult) error {
	msg := strings.TrimSpace(string(res.Stderr))
	switch {
	case res.ExitCode == 0:
		return nil
	case res.ExitCode == 3:
		return fmt.Errorf("%s: %w", op, backend.ErrNotExist)
	case strings.Contains(strings.ToLower(msg), "permission denied"):
		return fmt.Errorf("%s: %w: %s", op, fs.ErrPermission, msg)
	default:
		return fmt.Errorf("%s: exit %d: %s", op, res.ExitCode, msg)
	}
}

// statNotFound classifies a failed stat. The stat is a HEAD request, and
// a 404 to HEAD has no body, so "no such container" and "no such path"
// look the same: ask the daemon whether container id still runs.
func (b *Backend) statNotFound(ctx context.Context, id, op string, err error) error {
	if cerrdefs.IsNotFound(err) && b.gone(ctx, id) {
		return fmt.Errorf("%s: %w: %w", op, errContainerGone, err)
	}
	return wrapNotFound(op, err)
}

// wrapNotFound turns the archive API's 404 for a missing path into
// backend.ErrNotExist; a missing container stays as it is.
func wrapNotFound(op string, err error) error {
	if cerrdefs.IsNotFound(err) && !containerGone(err) {
		return fmt.Errorf("%s: %w: %w", op, backend.ErrNotExist, err)
	}
	return fmt.Errorf("%s: %w", op, err)
}
