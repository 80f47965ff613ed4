package auth

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"text/tabwriter"
)

// NoKeyringError is OpenDir's error for a key directory without a
// keyring file.
type NoKeyringError struct {
	// Dir is the directory, absolute.
	Dir string
}

// Error names the directory and the file it lacks.
func (e *NoKeyringError) Error() string {
	return fmt.Sprintf("no keyring in %s (no %s): a server using it would have made one", e.Dir, FileName)
}

// OpenDir opens the keyring of the key directory dir (made absolute)
// to manage its keys. A directory without a keyring file is one no
// server reads, so a key created there would be accepted by nothing:
// unless create is set OpenDir refuses it with a *NoKeyringError, and
// with create it starts a keyring there (Open).
func OpenDir(dir string, create bool) (*Keyring, error) {
	if dir == "" {
		return nil, errors.New("auth: no key directory")
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, fmt.Errorf("auth: key directory: %w", err)
	}
	if _, err := os.Stat(filepath.Join(abs, FileName)); errors.Is(err, os.ErrNotExist) && !create {
		return nil, &NoKeyringError{Dir: abs}
	}
	return Open(abs)
}

// File is the keyring file, DIR/keys.json ("" for a memory-only
// keyring).
func (k *Keyring) File() string {
	if k.dir == "" {
		return ""
	}
	return filepath.Join(k.dir, FileName)
}

// WriteKeys writes keyring entries (List) as an aligned table: name,
// role and creation time (UTC).
func WriteKeys(w io.Writer, es []Entry) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "NAME\tROLE\tCREATED")
	for _, e := range es {
		fmt.Fprintf(tw, "%s\t%s\t%s\n", e.Name, e.Role, e.Created.Format("2006-01-02 15:04:05Z"))
	}
	return tw.Flush()
}
