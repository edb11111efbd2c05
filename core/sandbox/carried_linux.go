//go:build !sandboxinit

package sandbox

import (
	"io"
	"runtime"

	"github.com/harnessd/harnessd/core/sandbox/initbin"
)

// The init program harnessd carries for this architecture. The program
// itself is built with the sandboxinit tag, without this file, so that it
// does not carry itself.
func init() {
	carriedProgram = func(w io.Writer) (bool, error) { return initbin.Copy(w, runtime.GOARCH) }
}
