// Package initbin carries the native sandbox's init program
// (core/sandbox/cmd/sandbox-init) inside harnessd, so that each sandbox
// starts a process of a few MB that initialises only what the init uses,
// not the daemon's whole binary and every package it links (prometheus,
// protobuf, grpc, ...), while harnessd stays one binary built by
// `go build`.
//
// # Basics
//
// `go generate ./core/sandbox/initbin` builds the program for every
// architecture in internal/build.Arches, static and reproducibly
// (internal/build), and writes each gzip'd beside sums.go, which records
// the toolchain and each program's SHA-256. Program returns the one for
// an architecture, checked against its sum. Package sandbox runs it from a
// sealed memfd (see its NativeOptions.Exe).
//
// # Caveats
//
// The programs are built from package sandbox and what it imports (core/files,
// core/event, seccomp, cgroup, x/sys/unix, go-json-experiment): any change
// there needs `go generate ./core/sandbox/initbin` again, and
// TestCarriedProgramsAreFresh fails, naming it, until it is run. That test
// rebuilds them, so it checks only where the toolchain is GoVersion; it
// skips, saying so, elsewhere.
package initbin

import (
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"fmt"
	"io"
)

//go:generate go run ./internal/gen

//go:embed sandbox-init.linux-*.gz
var programs embed.FS

// Program returns the init program carried for goarch, or nil, and no
// error, when none is.
func Program(goarch string) ([]byte, error) {
	want, ok := sums[goarch]
	if !ok {
		return nil, nil
	}
	name := "sandbox-init.linux-" + goarch + ".gz"
	z, err := programs.ReadFile(name)
	if err != nil {
		return nil, err
	}
	zr, err := gzip.NewReader(bytes.NewReader(z))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	prog, err := io.ReadAll(zr)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	if sum := sha256.Sum256(prog); hex.EncodeToString(sum[:]) != want {
		return nil, fmt.Errorf("%s: SHA-256 %x, not the %s sums.go records", name, sum, want)
	}
	return prog, nil
}
