package auth

import (
	"crypto/subtle"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"
)

// Keyring maps keys to principals: keys issued in memory for this
// process's own clients, and keys created for people, whose digests are
// in DIR/keys.json. The file is read again when it changes, so a key
// created or revoked by `starter keys` takes effect without a restart.
//
// A reload that fails (the file became unreadable or corrupt, an entry
// has an unknown role) fails closed: the keyring forgets every key of the
// file until a reload succeeds, because the file is the only record of
// revocations and a keyring kept from before could accept a key revoked
// since. Keys issued in memory, which the file does not govern, keep
// working, so the worker's own clients stay connected while people's keys
// are refused. The failure is logged at error level (once, and again when
// its cause changes; recovery is logged too) and Err reports it.
type Keyring struct {
	dir string

	// reloading serializes reloads, so that a slow reload cannot install
	// an older reading of the file over a newer one.
	reloading sync.Mutex

	mu      sync.Mutex
	mem     map[string]Principal // digest → principal
	file    map[string]Principal
	stamp   fileStamp
	checked time.Time
	err     error // of the last reload; file is empty while set
	loaded  bool  // a reload succeeded once (Open returns earlier failures)
	logger  *slog.Logger
}

type fileStamp struct {
	mod  time.Time
	size int64
}

// Entry is one key of the keyring file. Only the key's digest is kept.
type Entry struct {
	Name    string    `json:"name"`
	Role    Role      `json:"role"`
	Digest  string    `json:"sha256"`
	Created time.Time `json:"created"`
}

type keyFile struct {
	Keys []Entry `json:"keys"`
}

// FileName is the keyring file under the key directory.
const FileName = "keys.json"

// OperatorName is the principal of the key the worker creates for the
// machine's operator (starter and the library pick it up).
const OperatorName = "operator"

// Open returns the keyring kept in dir, creating dir (owner-only) when it
// is missing. An empty dir keeps keys in memory only.
func Open(dir string) (*Keyring, error) {
	k := &Keyring{dir: dir, mem: map[string]Principal{}, file: map[string]Principal{}}
	if dir == "" {
		return k, nil
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("auth: key directory: %w", err)
	}
	if err := os.Chmod(dir, 0o700); err != nil {
		return nil, fmt.Errorf("auth: key directory: %w", err)
	}
	if err := k.reload(true); err != nil {
		return nil, err
	}
	return k, nil
}

// SetLogger sets where reload failures and recoveries are logged; nil
// (the default) means slog.Default().
func (k *Keyring) SetLogger(l *slog.Logger) {
	k.mu.Lock()
	k.logger = l
	k.mu.Unlock()
}

// Err returns why the last reload of the keyring file failed, or nil when
// it succeeded. While it is not nil, Authenticate refuses every key of the
// file (see Keyring); the keyring looks at the file again at most a second
// later, and at once when a key it does not know is presented.
func (k *Keyring) Err() error {
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.err
}

// Dir is the key directory ("" for a memory-only keyring).
func (k *Keyring) Dir() string { return k.dir }

// KeyPath is where the key file of name is written.
func (k *Keyring) KeyPath(name string) string { return filepath.Join(k.dir, name+".key") }

// Issue returns a new key for name and role that lives only in this
// process's memory: the worker's own clients use such keys.
func (k *Keyring) Issue(name string, role Role) (string, error) {
	if !role.Valid() {
		return "", fmt.Errorf("auth: unknown role %q", role)
	}
	key, err := NewKey(name)
	if err != nil {
		return "", err
	}
	k.mu.Lock()
	k.mem[digest(key)] = Principal{Name: name, Role: role}
	k.mu.Unlock()
	return key, nil
}

// Create makes a key for name and role, records its digest in the
// keyring file and writes the key to DIR/NAME.key (mode 0600). An
// existing key of that name is replaced.
func (k *Keyring) Create(name string, role Role) (key, path string, err error) {
	if k.dir == "" {
		return "", "", errors.New("auth: a memory-only keyring cannot create key files")
	}
	if !role.Valid() {
		return "", "", fmt.Errorf("auth: unknown role %q", role)
	}
	if key, err = NewKey(name); err != nil {
		return "", "", err
	}
	kf, err := k.readFile()
	if err != nil {
		return "", "", err
	}
	kf.Keys = slices.DeleteFunc(kf.Keys, func(e Entry) bool { return e.Name == name })
	kf.Keys = append(kf.Keys, Entry{Name: name, Role: role, Digest: digest(key), Created: time.Now().UTC()})
	path = k.KeyPath(name)
	if err := writePrivate(path, []byte(key+"\n")); err != nil {
		return "", "", err
	}
	if err := k.writeFile(kf); err != nil {
		return "", "", err
	}
	return key, path, k.reload(true)
}

// Ensure creates a key for name and role unless its key file and a
// matching keyring entry are both there, and returns the key file. The
// worker ensures the operator's key (admin) this way.
func (k *Keyring) Ensure(name string, role Role) (string, error) {
	path := k.KeyPath(name)
	if b, err := os.ReadFile(path); err == nil {
		if p, ok := k.Authenticate(string(b)); ok && p.Name == name && p.Role == role {
			return path, nil
		}
	}
	_, path, err := k.Create(name, role)
	return path, err
}

// Revoke removes name's key from the keyring file and deletes its key
// file. Revoking a name without a key is an error.
func (k *Keyring) Revoke(name string) error {
	kf, err := k.readFile()
	if err != nil {
		return err
	}
	n := len(kf.Keys)
	kf.Keys = slices.DeleteFunc(kf.Keys, func(e Entry) bool { return e.Name == name })
	if len(kf.Keys) == n {
		return fmt.Errorf("auth: no key named %q", name)
	}
	if err := k.writeFile(kf); err != nil {
		return err
	}
	if err := os.Remove(k.KeyPath(name)); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("auth: remove key file: %w", err)
	}
	return k.reload(true)
}

// List returns the keyring file's entries, sorted by name.
func (k *Keyring) List() ([]Entry, error) {
	kf, err := k.readFile()
	if err != nil {
		return nil, err
	}
	slices.SortFunc(kf.Keys, func(a, b Entry) int { return strings.Compare(a.Name, b.Name) })
	return kf.Keys, nil
}

// Authenticate returns the principal of a key, given bare or as an
// authorization header value ("Bearer KEY"). A reload failure is not
// returned here (Err reports it, and it is logged): it makes the keys of
// the file unknown until the file can be read again.
func (k *Keyring) Authenticate(key string) (Principal, bool) {
	key = strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(key), BearerPrefix))
	if !IsKey(key) {
		return Principal{}, false
	}
	d := digest(key)
	_ = k.reload(false) // recorded in k.err, logged, and fails closed
	if p, ok := k.lookup(d); ok {
		return p, true
	}
	// A key created a moment ago: look at the file now, not in a second.
	_ = k.reload(true)
	return k.lookup(d)
}

func (k *Keyring) lookup(d string) (Principal, bool) {
	k.mu.Lock()
	defer k.mu.Unlock()
	for _, m := range []map[string]Principal{k.mem, k.file} {
		for have, p := range m {
			if subtle.ConstantTimeCompare([]byte(have), []byte(d)) == 1 {
				return p, true
			}
		}
	}
	return Principal{}, false
}

// reload reads the keyring file again when it changed (or the last
// reload failed); without force it looks at most once a second. A failure
// empties the file's part of the keyring, is recorded for Err and logged,
// and is returned.
func (k *Keyring) reload(force bool) error {
	if k.dir == "" {
		return nil
	}
	k.reloading.Lock()
	defer k.reloading.Unlock()
	k.mu.Lock()
	if !force && time.Since(k.checked) < time.Second {
		k.mu.Unlock()
		return nil
	}
	k.checked = time.Now()
	k.mu.Unlock()
	st, err := os.Stat(filepath.Join(k.dir, FileName))
	var stamp fileStamp
	if err == nil {
		stamp = fileStamp{st.ModTime(), st.Size()}
	} else if !errors.Is(err, fs.ErrNotExist) {
		return k.failed(fmt.Errorf("auth: keyring: %w", err))
	}
	k.mu.Lock()
	// After a failure the file is read again even if its stamp is the
	// last good one's (a backup restored with its modification time).
	same := !force && stamp == k.stamp && k.err == nil
	k.mu.Unlock()
	if same {
		return nil
	}
	kf, err := k.readFile()
	if err != nil {
		return k.failed(err)
	}
	m := make(map[string]Principal, len(kf.Keys))
	for _, e := range kf.Keys {
		m[e.Digest] = Principal{Name: e.Name, Role: e.Role}
	}
	k.mu.Lock()
	k.file, k.stamp = m, stamp
	was, logger := k.err, k.log()
	k.err, k.loaded = nil, true
	k.mu.Unlock()
	if was != nil {
		logger.Warn("auth: the keyring file is readable again; its keys authenticate again",
			"file", filepath.Join(k.dir, FileName), "keys", len(m))
	}
	return nil
}

// failed records a reload failure: the file's keys are forgotten (fail
// closed) until a reload succeeds. Once the keyring has loaded the file,
// it logs the failure when it is new or its cause changed (Open returns
// a failure of the first load instead). It returns err.
func (k *Keyring) failed(err error) error {
	k.mu.Lock()
	k.file, k.stamp = map[string]Principal{}, fileStamp{}
	changed := k.loaded && (k.err == nil || k.err.Error() != err.Error())
	k.err = err
	logger := k.log()
	k.mu.Unlock()
	if changed {
		logger.Error("auth: cannot reload the keyring file: refusing all of its keys until it is fixed (keys issued in memory still work)",
			"file", filepath.Join(k.dir, FileName), "err", err)
	}
	return err
}

// log returns the logger; k.mu must be held.
func (k *Keyring) log() *slog.Logger {
	if k.logger != nil {
		return k.logger
	}
	return slog.Default()
}

func (k *Keyring) readFile() (keyFile, error) {
	var kf keyFile
	b, err := os.ReadFile(filepath.Join(k.dir, FileName))
	if errors.Is(err, fs.ErrNotExist) {
		return kf, nil
	}
	if err != nil {
		return kf, fmt.Errorf("auth: keyring: %w", err)
	}
	if err := json.Unmarshal(b, &kf); err != nil {
		return kf, fmt.Errorf("auth: keyring %s: %w", filepath.Join(k.dir, FileName), err)
	}
	for _, e := range kf.Keys {
		if !e.Role.Valid() {
			return kf, fmt.Errorf("auth: keyring: key %q has unknown role %q", e.Name, e.Role)
		}
	}
	return kf, nil
}

func (k *Keyring) writeFile(kf keyFile) error {
	b, err := json.MarshalIndent(kf, "", "  ")
	if err != nil {
		return fmt.Errorf("auth: keyring: %w", err)
	}
	return writePrivate(filepath.Join(k.dir, FileName), append(b, '\n'))
}

// writePrivate writes a file readable by its owner only, atomically.
func writePrivate(path string, b []byte) error {
	f, err := os.CreateTemp(filepath.Dir(path), ".tmp-*")
	if err != nil {
		return fmt.Errorf("auth: write %s: %w", path, err)
	}
	defer os.Remove(f.Name())
	if err := f.Chmod(0o600); err != nil {
		f.Close()
		return fmt.Errorf("auth: write %s: %w", path, err)
	}
	if _, err := f.Write(b); err != nil {
		f.Close()
		return fmt.Errorf("auth: write %s: %w", path, err)
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return fmt.Errorf("auth: write %s: %w", path, err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("auth: write %s: %w", path, err)
	}
	if err := os.Rename(f.Name(), path); err != nil {
		return fmt.Errorf("auth: write %s: %w", path, err)
	}
	return nil
}

// ReadKeyFile reads a key file, refusing one that others may read.
func ReadKeyFile(path string) (string, error) {
	st, err := os.Stat(path)
	if err != nil {
		return "", fmt.Errorf("auth: key file: %w", err)
	}
	if st.Mode().Perm()&0o077 != 0 {
		return "", fmt.Errorf("auth: key file %s is readable by others (mode %04o): chmod 600 it", path, st.Mode().Perm())
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return "", fmt.Errorf("auth: key file: %w", err)
	}
	key := strings.TrimSpace(string(b))
	if !IsKey(key) {
		return "", fmt.Errorf("auth: %s does not hold a warden key", path)
	}
	return key, nil
}
