package daemon

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"syscall"
	"time"

	"github.com/harnessd/harnessd/core/config"
	"github.com/harnessd/harnessd/core/sandbox"
	"github.com/harnessd/harnessd/core/sandbox/cgroup"
	"github.com/harnessd/harnessd/core/session"
	"github.com/harnessd/harnessd/core/terminal"
)

// placement is where a session runs before it has an id: a sandbox, the
// shell already started in it, its workspace on the host, and its egress
// proxy when the network goes through one. The warm pool holds these.
type placement struct {
	sb    sandbox.Sandbox
	term  *terminal.Terminal
	ws    string
	keep  bool // ws is a client's directory: never removed
	proxy *egress
}

// close ends a placement no session took.
func (p *placement) close() {
	p.term.Close()
	p.sb.Destroy(context.Background())
	if p.proxy != nil {
		p.proxy.close()
	}
	if !p.keep {
		os.RemoveAll(p.ws)
	}
}

// setupSandboxes picks the driver harness.toml names and says, loudly,
// what isolation and which limits this host gives.
func (d *Daemon) setupSandboxes() error {
	sc := d.conf().Sandbox
	switch sc.Driver {
	case config.DriverNone:
		d.driver = &sandbox.None{Logger: d.log}
		d.log.Warn("sandbox.driver = \"none\": sessions run directly on the host, with no isolation and no limits")
		return nil
	case config.DriverNative:
	default:
		return fmt.Errorf("sandbox.driver %q: want %q or %q", sc.Driver, config.DriverNative, config.DriverNone)
	}
	opts := &sandbox.NativeOptions{Logger: d.log, StateDir: filepath.Join(d.runDir, "sandboxes"), DiskDir: filepath.Join(d.dataDir, "disks")}
	mgr, err := cgroup.Detect(cgroup.Options{Logger: d.log})
	if err != nil {
		d.log.Warn("cgroups unusable; limits fall back to rlimits", "err", err)
	} else {
		d.cgroups = mgr
		opts.Cgroups = sandbox.Cgroups(mgr)
	}
	nat, err := sandbox.NewNative(opts)
	if err != nil {
		return d.sandboxErr(err)
	}
	if err := nat.CheckHost(); err != nil {
		return d.sandboxErr(err)
	}
	// Workspace disks an earlier daemon left mounted: their files go to
	// their workspaces, the images go.
	if err := nat.Cleanup(context.Background()); err != nil {
		d.log.Warn("sandbox disks left by an earlier daemon", "err", err)
	}
	d.driver = nat
	// One real sandbox, now: a host that cannot make them (a missing
	// capability, a seccomp policy, an LSM) fails here with the reason,
	// not at the first session with a bare EPERM.
	if err := d.probe(); err != nil {
		return d.sandboxErr(err)
	}
	d.log.Info("sandbox driver native", "network", sc.Network, "memory_mb", sc.MemoryMB, "pids", sc.Pids,
		"cpu_weight", sc.CPUWeight, "tmp_mb", sc.TmpMB, "disk_mb", sc.DiskMB, "pool_size", sc.PoolSize)
	return nil
}

// probe makes and destroys one sandbox with its shell, and logs how its
// limits are enforced on this host.
func (d *Daemon) probe() error {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	name := "probe-" + newPlacementName()
	p, err := d.place(ctx, name, filepath.Join(d.runDir, name), nil, nil)
	if err != nil {
		if errors.Is(err, syscall.EPERM) {
			return fmt.Errorf("starting a sandbox: %w: the daemon may not create user namespaces with a root mapping; under systemd keep CAP_SETUID, CAP_SETGID and CAP_SETFCAP in CapabilityBoundingSet, elsewhere check seccomp/AppArmor policy and user.max_user_namespaces", err)
		}
		return fmt.Errorf("starting a sandbox: %w", err)
	}
	defer p.close()
	if st, err := p.sb.Stats(ctx); err == nil {
		for _, e := range st.Enforced {
			d.log.Info("sandbox limit", "limit", e.Limit, "value", e.Value, "enforced_by", e.By)
		}
	}
	return nil
}

func (d *Daemon) sandboxErr(err error) error {
	if d.cgroups != nil {
		d.cgroups.Close()
		d.cgroups = nil
	}
	return fmt.Errorf("sandbox: %w (this host cannot make native sandboxes; only if running without isolation is acceptable, set sandbox.driver = \"none\" in harness.toml)", err)
}

// pooled reports whether sessions come from a warm pool: only native
// sandboxes, whose shell sees the same /workspace whatever the host path.
func (d *Daemon) pooled() bool {
	return d.conf().Sandbox.Driver == config.DriverNative && d.conf().Sandbox.PoolSize > 0
}

// place makes a new placement with its workspace at ws, whose files
// belong to own (nil: the driver's default owner). A workspace the daemon
// did not make is never created or removed here. over, if not nil,
// replaces [sandbox]'s settings (a session's profile or narrowed network,
// see sessionSandbox).
func (d *Daemon) place(ctx context.Context, name, ws string, own *sandbox.User, over *config.Sandbox) (*placement, error) {
	return d.placeFilled(ctx, name, ws, own, over, nil)
}

// placeFilled is place with fill, if not nil, run on the workspace once
// its sandbox exists (its disk mounted, if it has one) and before its
// shell starts: a git source's clone, which the disk's quota then bounds.
// A fill that fails must leave the workspace empty.
func (d *Daemon) placeFilled(ctx context.Context, name, ws string, own *sandbox.User, over *config.Sandbox, fill func(ctx context.Context, ws string) error) (*placement, error) {
	keep := !d.ownWorkspace(ws)
	if !keep {
		if err := os.MkdirAll(ws, 0o700); err != nil {
			return nil, err
		}
	}
	sc := d.conf().Sandbox
	if over != nil {
		sc = *over
	}
	spec := sandbox.Spec{
		ID:        name,
		Workspace: ws,
		// A client's directory is userWorkspace's real path, checked:
		// the driver must bind that one, not what a symlink swapped into
		// its parents since leads to.
		WorkspaceResolved: keep,
		Image:             sc.Image,
		Protected:         sc.Protected,
		Network:           sandbox.Network(sc.Network),
		Owner:             own,
		Limits: sandbox.Limits{
			MemoryBytes: int64(sc.MemoryMB) << 20,
			Pids:        sc.Pids,
			CPUWeight:   sc.CPUWeight,
			TmpBytes:    int64(sc.TmpMB) << 20,
			DiskBytes:   int64(sc.DiskMB) << 20,
		},
	}
	p := &placement{ws: ws, keep: keep}
	fail := func(err error) (*placement, error) {
		if p.proxy != nil {
			p.proxy.close()
		}
		if !keep {
			os.RemoveAll(ws)
		}
		return nil, err
	}
	if sc.Network == config.NetworkProxy {
		eg, err := d.newEgress(name)
		if err != nil {
			return fail(err)
		}
		p.proxy, spec.ProxySocket = eg, eg.socket
	}
	sb, err := d.driver.Create(ctx, spec)
	if err != nil {
		return fail(err)
	}
	p.sb = sb
	if fill != nil {
		if err := fill(ctx, ws); err != nil {
			sb.Destroy(context.WithoutCancel(ctx))
			return fail(err)
		}
	}
	opts := session.SandboxTerminal(session.ConfigFrom(d.conf(), ws).Terminal, sb)
	opts.Logger = d.log
	term, err := terminal.New(ctx, opts)
	if err != nil {
		sb.Destroy(context.WithoutCancel(ctx))
		return fail(err)
	}
	p.term = term
	return p, nil
}

// newPlacementName names a pooled sandbox before any session has it.
func newPlacementName() string {
	var b [6]byte
	_, _ = rand.Read(b[:])
	return "w" + hex.EncodeToString(b[:])
}
