package sandbox

import (
	"errors"
	"fmt"
	"syscall"
)

var (
	// ErrInvalidSpec means a Spec field is malformed; the message names it.
	ErrInvalidSpec = errors.New("sandbox: invalid spec")

	// ErrUnsupported means this driver cannot run on this platform.
	ErrUnsupported = errors.New("sandbox: not supported on this platform")

	// ErrUserNamespaces means the kernel does not let this process create
	// a user namespace; the message names the setting to change.
	ErrUserNamespaces = errors.New("sandbox: user namespaces unavailable")

	// ErrDestroyed is returned by Prepare and Started after Destroy.
	ErrDestroyed = errors.New("sandbox: destroyed")

	// ErrNotPrepared is returned by Started without a Prepare before it.
	ErrNotPrepared = errors.New("sandbox: Started without Prepare")

	// ErrSetup means the sandbox init failed to build the sandbox; the
	// error is an *InitError saying which step failed on what.
	ErrSetup = errors.New("sandbox: setup failed")
)

// InitError is a failure inside the sandbox init, carried back to the
// daemon over the init's pipe, like runc's init errors.
type InitError struct {
	Op    string        // the step or syscall: "mount", "pivot_root", "seccomp", "exec", ...
	Path  string        // what it was applied to, if anything
	Errno syscall.Errno // the errno, if the failure was a syscall's
	Msg   string        // the whole message when there is no errno
}

func (e *InitError) Error() string {
	s := "sandbox init: " + e.Op
	if e.Path != "" {
		s += " " + e.Path
	}
	switch {
	case e.Errno != 0:
		s += ": " + e.Errno.Error()
	case e.Msg != "":
		s += ": " + e.Msg
	}
	return s
}

// Unwrap makes errors.Is(err, ErrSetup) and errors.Is(err, syscall.EPERM)
// (say) work.
func (e *InitError) Unwrap() []error {
	if e.Errno != 0 {
		return []error{ErrSetup, e.Errno}
	}
	return []error{ErrSetup}
}

// initErr builds the InitError for a failed step.
func initErr(op, path string, err error) *InitError {
	var ie *InitError
	if errors.As(err, &ie) {
		return ie
	}
	e := &InitError{Op: op, Path: path}
	var errno syscall.Errno
	if errors.As(err, &errno) {
		e.Errno = errno
	} else if err != nil {
		e.Msg = err.Error()
	}
	return e
}

// featureError is ErrUserNamespaces with what is missing and what to do.
func featureError(format string, args ...any) error {
	return fmt.Errorf("%w: %s", ErrUserNamespaces, fmt.Sprintf(format, args...))
}
