package config

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/wardenhq/warden/auth"
)

// KeyDir is where the embedded server keeps its keyring and key files.
func (c Config) KeyDir() string {
	if c.Server.DataDir == "" {
		return ""
	}
	return filepath.Join(c.Server.DataDir, "auth")
}

// ResolveKeyFile fills Temporal.KeyFile when it is empty: from
// WARDEN_KEY_FILE, else, for a client of the embedded server (no
// temporal.address, or an address on this machine), the operator key
// under server.data_dir/auth when it exists.
func (c *Config) ResolveKeyFile(address string) {
	if c.Temporal.KeyFile != "" {
		return
	}
	if f := os.Getenv("WARDEN_KEY_FILE"); f != "" {
		c.Temporal.KeyFile = f
		return
	}
	if c.Temporal.Address != "" && address == "" || c.KeyDir() == "" {
		return
	}
	p := filepath.Join(c.KeyDir(), auth.OperatorName+".key")
	if _, err := os.Stat(p); err == nil {
		c.Temporal.KeyFile = p
	}
}

// Key reads the warden key of Temporal.KeyFile; "" when none is set.
func (t Temporal) Key() (string, error) {
	if t.KeyFile == "" {
		return "", nil
	}
	key, err := auth.ReadKeyFile(t.KeyFile)
	if errors.Is(err, fs.ErrNotExist) {
		return "", errors.New("temporal.key_file " + t.KeyFile + " does not exist: create keys with `starter keys create`, or start the worker once")
	}
	return key, err
}

// KeyName is the name of the warden key in KeyFile ("" without one, or
// when it cannot be read: ClientOptions reports that error).
func (t Temporal) KeyName() string {
	key, err := t.Key()
	if err != nil || key == "" {
		return ""
	}
	name, _ := auth.NameOf(key)
	return name
}

// InboxKeyFile is inbox.key_file, else WARDEN_INBOX_KEY_FILE.
func (c Config) InboxKeyFile() string {
	if c.Inbox.KeyFile != "" {
		return c.Inbox.KeyFile
	}
	return os.Getenv("WARDEN_INBOX_KEY_FILE")
}
