package bench

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// ErrNoListener is returned by ListenerPID when no local process listens
// on the port (or its sockets cannot be read).
var ErrNoListener = errors.New("no local process listens on the port")

// RSS returns the resident set size of process pid in bytes, read from
// /proc/PID/status.
func RSS(pid int) (int64, error) {
	return statusBytes(pid, "VmRSS")
}

// RSSParts splits the resident set of process pid into anonymous memory
// (heap, stacks: what the process allocated) and file-backed pages (its
// executable's code and data mapped from the page cache), in bytes.
func RSSParts(pid int) (anon, file int64, err error) {
	if anon, err = statusBytes(pid, "RssAnon"); err != nil {
		return 0, 0, err
	}
	file, err = statusBytes(pid, "RssFile")
	return anon, file, err
}

// statusBytes reads the kB field key of /proc/PID/status, in bytes.
func statusBytes(pid int, key string) (int64, error) {
	f, err := os.Open(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, fmt.Errorf("%s of %d: %w", key, pid, err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		rest, ok := strings.CutPrefix(sc.Text(), key+":")
		if !ok {
			continue
		}
		fields := strings.Fields(rest)
		if len(fields) < 1 {
			break
		}
		kb, err := strconv.ParseInt(fields[0], 10, 64)
		if err != nil {
			return 0, fmt.Errorf("%s of %d: %w", key, pid, err)
		}
		return kb * 1024, nil
	}
	if err := sc.Err(); err != nil {
		return 0, fmt.Errorf("%s of %d: %w", key, pid, err)
	}
	return 0, fmt.Errorf("%s of %d: no %s line", key, pid, key)
}

// ListenerPID finds the local process listening on TCP port (IPv4 or
// IPv6) by matching the socket inodes of /proc/net/tcp{,6} against the
// file descriptors under /proc/*/fd. Reading other users' descriptors
// needs the same user or root.
func ListenerPID(port int) (int, error) {
	inodes := map[string]bool{}
	for _, p := range []string{"/proc/net/tcp", "/proc/net/tcp6"} {
		if err := listenInodes(p, port, inodes); err != nil && !errors.Is(err, os.ErrNotExist) {
			return 0, err
		}
	}
	if len(inodes) == 0 {
		return 0, fmt.Errorf("port %d: %w", port, ErrNoListener)
	}
	fds, _ := filepath.Glob("/proc/[0-9]*/fd/*")
	for _, fd := range fds {
		link, err := os.Readlink(fd)
		if err != nil || !strings.HasPrefix(link, "socket:[") {
			continue
		}
		if inodes[strings.TrimSuffix(strings.TrimPrefix(link, "socket:["), "]")] {
			pid, err := strconv.Atoi(strings.Split(fd, "/")[2])
			if err == nil {
				return pid, nil
			}
		}
	}
	return 0, fmt.Errorf("port %d: %w", port, ErrNoListener)
}

// listenInodes adds the inodes of sockets in LISTEN state on port, read
// from a /proc/net/tcp-format file, to into.
func listenInodes(path string, port int, into map[string]bool) error {
	f, err := os.Open(path)
	if err != nil {
		return fmt.Errorf("read %s: %w", path, err)
	}
	defer f.Close()
	want := fmt.Sprintf(":%04X", port)
	sc := bufio.NewScanner(f)
	sc.Scan() // header
	for sc.Scan() {
		fs := strings.Fields(sc.Text())
		// sl local rem st tx:rx tr:when retrnsmt uid timeout inode
		if len(fs) < 10 || fs[3] != "0A" || !strings.HasSuffix(fs[1], want) {
			continue
		}
		into[fs[9]] = true
	}
	if err := sc.Err(); err != nil {
		return fmt.Errorf("read %s: %w", path, err)
	}
	return nil
}
