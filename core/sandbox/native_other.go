//go:build !linux

package sandbox

import (
	"context"
	"fmt"
	"os"
)

// Native is the Linux namespaces driver; off Linux it cannot be made.
type Native struct{}

// NewNative returns ErrUnsupported off Linux.
func NewNative(*NativeOptions) (*Native, error) { return nil, ErrUnsupported }

// Name is "native".
func (*Native) Name() string { return "native" }

// CheckHost returns ErrUnsupported off Linux.
func (*Native) CheckHost() error { return ErrUnsupported }

// Create returns ErrUnsupported off Linux.
func (*Native) Create(context.Context, Spec) (Sandbox, error) { return nil, ErrUnsupported }

// InitMain exits: there is no sandbox init off Linux.
func InitMain() {
	fmt.Fprintf(os.Stderr, "harnessd %s: %v\n", InitCommand, ErrUnsupported)
	os.Exit(initFailed)
}

const initFailed = 125
