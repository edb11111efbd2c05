//go:build !sandboxinit

package sandbox

import "github.com/harnessd/harnessd/core/sandbox/gitlsm"

// The kernel's part of the git guard, for the daemon only: the init
// does not carry the BPF library.
func init() {
	loadKernelRule = func() (kernelRule, error) {
		r, err := gitlsm.Load()
		if err != nil {
			return nil, err
		}
		return r, nil
	}
}
