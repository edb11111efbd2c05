//go:build !sandboxinit

package sandbox

import (
	"runtime"

	"github.com/harnessd/harnessd/core/sandbox/initbin"
)

// The init program harnessd carries for this architecture. The program
// itself is built with the sandboxinit tag, without this file, so that it
// does not carry itself.
func init() {
	carriedProgram = func() ([]byte, error) { return initbin.Program(runtime.GOARCH) }
}
