package session

import (
	"sort"

	"github.com/harnessd/harnessd/core/config"
	"github.com/harnessd/harnessd/core/terminal"
	"github.com/harnessd/harnessd/core/trim"
)

// ConfigFrom turns harness.toml's terminal and trim settings into a
// session's, with dir as the shell's starting directory. Events, Outputs
// and Logger are left for the caller.
func ConfigFrom(c config.Config, dir string) Config {
	env := make([]string, 0, len(c.Terminal.Env))
	for k, v := range c.Terminal.Env {
		env = append(env, k+"="+v)
	}
	sort.Strings(env) // a stable order, so two sessions of one config start alike
	return Config{
		Terminal: terminal.Options{
			Shell:       c.Terminal.Shell,
			Dir:         dir,
			Env:         env,
			SoftTimeout: c.Terminal.SoftTimeout.Duration,
			HardTimeout: c.Terminal.HardTimeout.Duration,
			KillGrace:   c.Terminal.KillGrace.Duration,
			MaxWait:     c.Terminal.MaxWait.Duration,
			Cols:        c.Terminal.Cols,
			Rows:        c.Terminal.Rows,
		},
		MaxOutput:        int64(c.Store.MaxOutputMB) << 20,
		MaxSessionOutput: int64(c.Store.MaxSessionOutputMB) << 20,
		Trim: trim.Config{
			MaxChars: c.Trim.MaxChars,
			Head:     c.Trim.Head,
			Tail:     c.Trim.Tail,
			MaxKeep:  c.Trim.MaxKeep,
			Keywords: c.Trim.Keywords,
			LineCap:  c.Trim.LineCap,
		},
	}
}
