package files

import "errors"

// ErrUnavailable means the session has no way to reach its files now: its
// sandbox's init is gone (the shell exited and is not yet rebuilt, or the
// sandbox was destroyed) or its channel broke.
var ErrUnavailable = errors.New("files: the sandbox's file service is not available")
