//go:build linux

// Command sandbox-init is the native sandbox's init on its own: package
// sandbox's InitMain and what it imports, without the daemon's packages,
// whose initialisation every sandbox would otherwise pay before its first
// mount. `go generate ./core/sandbox/initbin` builds it for each
// architecture into package initbin, which harnessd carries; the native
// driver runs it from a sealed memfd. Built with the sandboxinit tag, so
// that it does not carry itself.
package main

import (
	"fmt"
	"os"

	"github.com/harnessd/harnessd/core/sandbox"
)

func main() {
	if len(os.Args) > 1 && os.Args[1] == sandbox.InitCommand {
		sandbox.InitMain()
	}
	fmt.Fprintf(os.Stderr, "sandbox-init: only harnessd runs this, as `%s`\n", sandbox.InitCommand)
	os.Exit(2)
}
