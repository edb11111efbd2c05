// Package builtin serves the agents built into harnessd, as `harnessd
// plugin NAME` runs them: the same binary, a separate process, the same
// go-plugin contract as any external agent.
package builtin

import (
	"fmt"
	"os"

	"github.com/harnessd/harnessd/plugins/openai"
	"github.com/harnessd/harnessd/plugins/scripted"
)

// Command is the first argument that makes harnessd serve a built-in agent.
const Command = "plugin"

// mains are the built-in agents.
var mains = map[string]func() int{
	scripted.Name: scripted.Main,
	openai.Name:   openai.Main,
}

// Names are the built-in agents' names.
func Names() []string {
	var out []string
	for n := range mains {
		out = append(out, n)
	}
	return out
}

// Has reports whether name is a built-in agent.
func Has(name string) bool { _, ok := mains[name]; return ok }

// Main serves the built-in agent args[0] and returns the exit status; it
// is `harnessd plugin NAME`, which takes over the process (go-plugin owns
// its stdout) and must run before anything else.
func Main(args []string) int {
	if len(args) != 1 || !Has(args[0]) {
		fmt.Fprintf(os.Stderr, "usage: harnessd plugin NAME (one of %v); harnessd starts these itself\n", Names())
		return 2
	}
	return mains[args[0]]()
}
