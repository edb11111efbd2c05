package initbin

import (
	"bytes"
	"context"
	"crypto/sha256"
	"debug/elf"
	"encoding/hex"
	"runtime"
	"testing"

	"github.com/harnessd/harnessd/core/sandbox/initbin/internal/build"
)

// TestCarriedPrograms: each carried program unpacks, matches its sum and
// is a static executable for its architecture.
func TestCarriedPrograms(t *testing.T) {
	machine := map[string]elf.Machine{"amd64": elf.EM_X86_64, "arm64": elf.EM_AARCH64}
	for _, arch := range build.Arches {
		prog, err := Program(arch)
		if err != nil || prog == nil {
			t.Fatalf("Program(%s): %v, %d bytes", arch, err, len(prog))
		}
		f, err := elf.NewFile(bytes.NewReader(prog))
		if err != nil {
			t.Fatalf("%s: %v", arch, err)
		}
		if f.Machine != machine[arch] || f.Type != elf.ET_EXEC {
			t.Errorf("%s: machine %v, type %v", arch, f.Machine, f.Type)
		}
		for _, p := range f.Progs {
			if p.Type == elf.PT_INTERP {
				t.Errorf("%s: dynamically linked; the init must map no loader or libc", arch)
			}
		}
	}
	if prog, err := Program("nosucharch"); prog != nil || err != nil {
		t.Errorf("Program(nosucharch) = %d bytes, %v", len(prog), err)
	}
}

// TestCarriedProgramsAreFresh rebuilds every program from the sources
// here and checks it is the one carried, byte for byte: a change to the
// init's sources needs `go generate ./core/sandbox/initbin`.
func TestCarriedProgramsAreFresh(t *testing.T) {
	if runtime.Version() != GoVersion {
		t.Skipf("the carried programs were built by %s and this is %s: they can be checked only with the same toolchain", GoVersion, runtime.Version())
	}
	for _, arch := range build.Arches {
		prog, err := build.Program(context.Background(), arch)
		if err != nil {
			t.Fatal(err)
		}
		sum := sha256.Sum256(prog)
		if got := hex.EncodeToString(sum[:]); got != sums[arch] {
			t.Errorf("the %s init program carried is stale (its sources build to %s, it is %s): run `go generate ./core/sandbox/initbin` and commit what it writes", arch, got, sums[arch])
		}
	}
}
