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
// an architecture, checked against its sum, and Copy writes it out without
// holding it in memory. Package sandbox runs it from a sealed memfd (see
// its NativeOptions.Exe).
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

// Copy writes the init program carried for goarch to w, unpacking it on
// the way, and checks it against its sum once all of it is written: on an
// error, what w got must not be used. It reports whether a program is
// carried for goarch: false, with no error, when none is.
//
// Only the decompressor's state and a 32 KiB buffer are held meanwhile:
// the whole program in a slice, and the slices it grew from, left some
// 12 MB resident in the caller's heap, and every native sandbox's start
// forks harnessd, whose kernel copies the page tables of every resident
// page and whose exec tears them down again.
func Copy(w io.Writer, goarch string) (bool, error) {
	want, ok := sums[goarch]
	if !ok {
		return false, nil
	}
	name := "sandbox-init.linux-" + goarch + ".gz"
	z, err := programs.Open(name) // read in place: ReadFile would copy it
	if err != nil {
		return true, err
	}
	defer z.Close()
	zr, err := gzip.NewReader(z)
	if err != nil {
		return true, fmt.Errorf("%s: %w", name, err)
	}
	h := sha256.New()
	if _, err := io.Copy(io.MultiWriter(w, h), zr); err != nil {
		return true, fmt.Errorf("%s: %w", name, err)
	}
	if sum := h.Sum(nil); hex.EncodeToString(sum) != want {
		return true, fmt.Errorf("%s: SHA-256 %x, not the %s sums.go records", name, sum, want)
	}
	return true, nil
}

// Program returns the init program carried for goarch, or nil, and no
// error, when none is.
func Program(goarch string) ([]byte, error) {
	var b bytes.Buffer
	if ok, err := Copy(&b, goarch); !ok || err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}
