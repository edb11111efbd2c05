// Package build builds the sandbox's init program the one way whose output
// package initbin carries: the same bytes from the same sources and
// toolchain, on any machine and from any directory.
package build

import (
	"bytes"
	"compress/gzip"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// Package is the init program's import path.
const Package = "github.com/harnessd/harnessd/core/sandbox/cmd/sandbox-init"

// Arches are the GOARCH values a program is carried for: those package
// seccomp has a system call table for. Elsewhere the driver re-executes
// harnessd itself.
var Arches = []string{"amd64", "arm64"}

// FileName is the name of the gzip'd program for goarch in package
// initbin's directory.
func FileName(goarch string) string { return "sandbox-init.linux-" + goarch + ".gz" }

// fixed are the settings the output depends on, whatever the caller's
// environment says: static (no cgo, so no loader and libc to map), the
// baseline instruction set of each architecture, no experiments, this
// toolchain (no switch to another), and no stamps of the build's place or
// time (-trimpath, -buildvcs=false, an empty build id), stripped.
var fixed = map[string]string{
	"CGO_ENABLED":  "0",
	"GOOS":         "linux",
	"GOAMD64":      "v1",
	"GOARM64":      "v8.0",
	"GOEXPERIMENT": "",
	"GOFLAGS":      "",
	"GOTOOLCHAIN":  "local",
}

// Program builds the init program for goarch with the go command in PATH
// and returns it.
func Program(ctx context.Context, goarch string) ([]byte, error) {
	dir, err := os.MkdirTemp("", "harnessd-initbin-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	out := filepath.Join(dir, "sandbox-init")
	cmd := exec.CommandContext(ctx, "go", "build", "-trimpath", "-buildvcs=false", "-tags", "sandboxinit",
		"-ldflags", "-s -w -buildid=", "-o", out, Package)
	env := []string{"GOARCH=" + goarch}
	for k, v := range fixed {
		env = append(env, k+"="+v)
	}
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		if _, ok := fixed[k]; !ok && k != "GOARCH" {
			env = append(env, kv)
		}
	}
	cmd.Env = env
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Run(); err != nil {
		return nil, fmt.Errorf("go build %s for %s: %w: %s", Package, goarch, err, bytes.TrimSpace(stderr.Bytes()))
	}
	return os.ReadFile(out)
}

// Gzip compresses b the same way every time (no name, no time in the
// header).
func Gzip(b []byte) ([]byte, error) {
	var buf bytes.Buffer
	zw, err := gzip.NewWriterLevel(&buf, gzip.BestCompression)
	if err != nil {
		return nil, err
	}
	if _, err := zw.Write(b); err != nil {
		return nil, err
	}
	if err := zw.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}
