package python

import _ "embed"

// driverSource is the program the interpreter runs (driver.py): it reads
// cells from fd 3 and reports their ends there.
//
//go:embed driver.py
var driverSource string

// driverArgs is the interpreter's command line after its path: the
// driver is given whole, and compiled under its own file name, so its
// frames can be told from a cell's and left out of tracebacks.
func driverArgs(plain bool) []string {
	mode := "auto"
	if plain {
		mode = "plain"
	}
	return []string{"-c", `import sys;exec(compile(sys.argv[1],"<harnessd>","exec"))`, driverSource, mode}
}
