//go:build !linux

package seccomp

import "errors"

// ErrUnsupportedArch means the filter has no syscall table for this
// architecture.
var ErrUnsupportedArch = errors.New("seccomp: architecture not supported")

// Denied lists nothing off Linux.
func Denied() []string { return nil }

// Install is not available off Linux.
func Install() error { return ErrUnsupportedArch }

// InstallAgent is not available off Linux.
func InstallAgent() error { return ErrUnsupportedArch }
