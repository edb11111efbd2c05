package cgroup_test

import (
	"io"
	"log/slog"
	"os"
	"os/exec"
	"syscall"

	"github.com/harnessd/harnessd/core/sandbox/cgroup"
)

// Example starts a command in a session group the way a sandbox does:
// born in the v2 group where the host has one, joined to the v1 groups
// while it waits on stdin, then released. (No output: it differs by host.)
func Example() {
	m, err := cgroup.Detect(cgroup.Options{Logger: slog.Default()}) // logs the Report
	if err != nil {
		panic(err)
	}
	defer m.Close()

	g, err := m.New("session-1", cgroup.Limits{MemoryBytes: 256 << 20, Pids: 64, CPUWeight: 100})
	if err != nil {
		panic(err)
	}
	defer g.Destroy()

	cmd := exec.Command("/bin/sh", "-c", "read go; echo inside")
	cmd.Stdout = os.Stdout
	cmd.SysProcAttr = &syscall.SysProcAttr{}
	g.Prepare(cmd.SysProcAttr)
	release, err := cmd.StdinPipe()
	if err != nil {
		panic(err)
	}
	if err := cmd.Start(); err != nil {
		panic(err)
	}
	if err := g.Add(cmd.Process.Pid); err != nil {
		_ = cmd.Process.Kill()
	}
	_, _ = io.WriteString(release, "go\n")
	_ = cmd.Wait()
}
