//go:build !linux

package sandbox

import "github.com/harnessd/harnessd/core/files"

// LocalFiles is nil off Linux: the file primitives are Linux's.
func LocalFiles() files.Filer { return nil }
