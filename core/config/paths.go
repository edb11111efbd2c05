package config

import (
	"os"
	"path/filepath"
	"strconv"
)

// Where things live when the file leaves a path empty. Root (the system
// service) uses the FHS places systemd's RuntimeDirectory= and
// StateDirectory= create; anyone else uses the XDG base directories.
const (
	SystemSocket  = "/run/harnessd/harnessd.sock"
	SystemDataDir = "/var/lib/harnessd"
)

// SocketPath is daemon.socket resolved: the setting, else
// $XDG_RUNTIME_DIR/harnessd.sock for an ordinary user, else SystemSocket.
// getenv nil means os.Getenv. Clients resolve it the same way, so a
// client and a daemon run by the same user meet without configuration.
func (c Config) SocketPath(getenv func(string) string) string {
	if c.Daemon.Socket != "" {
		return c.Daemon.Socket
	}
	return DefaultSocket(getenv)
}

// DefaultSocket is the socket path used when nothing names one.
func DefaultSocket(getenv func(string) string) string {
	if getenv == nil {
		getenv = os.Getenv
	}
	if os.Geteuid() != 0 {
		if d := getenv("XDG_RUNTIME_DIR"); d != "" {
			return filepath.Join(d, "harnessd.sock")
		}
	}
	return SystemSocket
}

// DataPath is daemon.data_dir resolved: the setting, else SystemDataDir
// as root, else $XDG_DATA_HOME/harnessd, else ~/.local/share/harnessd.
func (c Config) DataPath(getenv func(string) string) string {
	if c.Daemon.DataDir != "" {
		return c.Daemon.DataDir
	}
	if getenv == nil {
		getenv = os.Getenv
	}
	if os.Geteuid() == 0 {
		return SystemDataDir
	}
	if d := getenv("XDG_DATA_HOME"); d != "" {
		return filepath.Join(d, "harnessd")
	}
	if h := getenv("HOME"); h != "" {
		return filepath.Join(h, ".local", "share", "harnessd")
	}
	return filepath.Join(os.TempDir(), "harnessd-"+itoa(os.Geteuid()))
}

// StorePath is store.path resolved: the setting, else harnessd.db in the
// data directory.
func (c Config) StorePath(getenv func(string) string) string {
	if c.Store.Path != "" {
		return c.Store.Path
	}
	return filepath.Join(c.DataPath(getenv), "harnessd.db")
}

func itoa(n int) string { return strconv.Itoa(n) }
