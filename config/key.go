package config

import (
	"os"
	"path/filepath"
)

// OperatorKeyFile is the operator key's file name in KeyDir (the
// keyring of package auth names it after auth.OperatorName).
const OperatorKeyFile = "operator.key"

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
	p := filepath.Join(c.KeyDir(), OperatorKeyFile)
	if _, err := os.Stat(p); err == nil {
		c.Temporal.KeyFile = p
	}
}

// InboxKeyFile is inbox.key_file, else WARDEN_INBOX_KEY_FILE.
func (c Config) InboxKeyFile() string {
	if c.Inbox.KeyFile != "" {
		return c.Inbox.KeyFile
	}
	return os.Getenv("WARDEN_INBOX_KEY_FILE")
}
