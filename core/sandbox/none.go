package sandbox

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
)

// None is the driver without isolation: the shell runs on the host, as
// the daemon's user, in the workspace directory itself. It exists for an
// explicit setting only, and says so loudly.
type None struct {
	Logger *slog.Logger // default slog.Default()
}

var _ Driver = (*None)(nil)

// Name is "none".
func (*None) Name() string { return "none" }

// Create logs a warning and returns a sandbox that is only a directory.
func (d *None) Create(ctx context.Context, spec Spec) (Sandbox, error) {
	spec, err := spec.withDefaults()
	if err != nil {
		return nil, err
	}
	if spec.Workspace == "" {
		return nil, fmt.Errorf("%w: workspace is required", ErrInvalidSpec)
	}
	ws, err := filepath.Abs(spec.Workspace)
	if err != nil {
		return nil, fmt.Errorf("workspace: %w", err)
	}
	ctl, err := os.MkdirTemp("", "harnessd-none-"+spec.ID+"-")
	if err != nil {
		return nil, fmt.Errorf("control dir: %w", err)
	}
	log := d.Logger
	if log == nil {
		log = slog.Default()
	}
	log.WarnContext(ctx, "sandbox driver none: NO ISOLATION, the agent's shell runs directly on the host as the daemon's user",
		"sandbox", spec.ID, "workspace", ws, "uid", os.Getuid())
	return &noneSandbox{id: spec.ID, ws: ws, ctl: ctl, env: spec.Env}, nil
}

type noneSandbox struct {
	id, ws, ctl string
	env         []string
	once        sync.Once
}

func (s *noneSandbox) ID() string               { return s.id }
func (s *noneSandbox) Workdir() string          { return s.ws }
func (s *noneSandbox) ControlDir() string       { return s.ctl }
func (s *noneSandbox) ControlDirInside() string { return s.ctl }
func (s *noneSandbox) InitWrapped() bool        { return false }
func (s *noneSandbox) Started(int) error        { return nil }

// Prepare only adds Spec.Env: the command runs as it is.
func (s *noneSandbox) Prepare(cmd *exec.Cmd) error {
	cmd.Env = append(cmd.Env, s.env...)
	return nil
}

func (s *noneSandbox) Stats(context.Context) (Stats, error) {
	return Stats{Enforced: []Enforced{{Limit: "all", By: "not enforced: driver none"}}}, nil
}

func (s *noneSandbox) Destroy(context.Context) error {
	var err error
	s.once.Do(func() { err = os.RemoveAll(s.ctl) })
	return err
}
