package sandbox

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"strings"
)

// The index rule. Git takes the paths of its index's entries as they
// are when it reads them: git 2.39 checks a path when it adds an entry,
// not when it reads one back. The agent can write a repository's index
// by hand, so an entry named /home/u/.bashrc, ../x or .git/config would
// have the user's `git checkout -- .` write there, and their `git commit
// -a` read what is there into the repository, for the next session to
// read. So at the session's end the guard reads every index of the
// user's repositories and moves aside (as the in-progress states) one
// with an entry git would not have made, or one it cannot read.

// errIndex is an index that could not be read as one.
var errIndex = errors.New("not an index")

// badIndexEntry reads an index (versions 2 to 4; hashLen 20 for SHA-1
// repositories, 32 for SHA-256) and returns the first entry path git
// would not make ("" if none), or errIndex.
func badIndexEntry(data []byte, hashLen int) (string, error) {
	if len(data) < 12+hashLen || string(data[:4]) != "DIRC" {
		return "", errIndex
	}
	version := binary.BigEndian.Uint32(data[4:8])
	if version < 2 || version > 4 {
		return "", fmt.Errorf("%w: version %d", errIndex, version)
	}
	count := binary.BigEndian.Uint32(data[8:12])
	end := len(data) - hashLen // the trailing checksum
	off := 12
	var prev []byte
	for i := uint32(0); i < count; i++ {
		start := off
		fixed := 40 + hashLen // times, dev, ino, mode, uid, gid, size; the object id
		if off+fixed+2 > end {
			return "", errIndex
		}
		mode := binary.BigEndian.Uint32(data[off+24 : off+28])
		flags := binary.BigEndian.Uint16(data[off+fixed : off+fixed+2])
		off += fixed + 2
		if flags&0x4000 != 0 { // extended flags
			if version < 3 || off+2 > end {
				return "", errIndex
			}
			off += 2
		}
		var name []byte
		if version == 4 {
			strip, n := indexVarint(data[off:end])
			if n == 0 || strip > uint64(len(prev)) {
				return "", errIndex
			}
			off += n
			nul := bytes.IndexByte(data[off:end], 0)
			if nul < 0 {
				return "", errIndex
			}
			name = append(append([]byte(nil), prev[:len(prev)-int(strip)]...), data[off:off+nul]...)
			off += nul + 1
		} else {
			nul := bytes.IndexByte(data[off:end], 0)
			if nul < 0 {
				return "", errIndex
			}
			name = data[off : off+nul]
			// Entries are padded with NULs to a multiple of 8 bytes.
			off = start + (off-start+nul+8)&^7
			if off > end {
				return "", errIndex
			}
		}
		// An empty name is a split index's entry that takes its name
		// from the shared index (sharedindex.*, checked as an index of
		// its own).
		if len(name) > 0 && !indexPathOK(string(name), mode&0o170000 == 0o040000) {
			return string(name), nil
		}
		prev = name
	}
	return "", nil
}

// indexVarint reads git's offset varint, returning it and its length (0
// if b ends first or it overflows).
func indexVarint(b []byte) (uint64, int) {
	if len(b) == 0 {
		return 0, 0
	}
	c := b[0]
	val := uint64(c & 127)
	n := 1
	for c&128 != 0 {
		if n >= len(b) || n > 9 {
			return 0, 0
		}
		c = b[n]
		n++
		val = (val+1)<<7 | uint64(c&127)
	}
	return val, n
}

// indexPathOK reports whether git would make an index entry of path: a
// relative path of non-empty components, none of them ".", ".." or .git
// in any spelling git (with core.protectNTFS and core.protectHFS's
// plainer forms) takes as one; a sparse directory entry ends in "/".
func indexPathOK(path string, sparseDir bool) bool {
	if sparseDir {
		var ok bool
		if path, ok = strings.CutSuffix(path, "/"); !ok {
			return false
		}
	}
	if path == "" || path[0] == '/' {
		return false
	}
	for _, c := range strings.Split(path, "/") {
		switch c {
		case "", ".", "..":
			return false
		}
		if dotGitLike(c) {
			return false
		}
	}
	return true
}

// dotGitLike reports whether a path component is .git as a
// case-insensitive or NTFS-trimmed filesystem would take it (".GIT",
// ".git.", ".git ", "git~1").
func dotGitLike(c string) bool {
	t := strings.ToLower(strings.TrimRight(c, ". "))
	return t == ".git" || t == "git~1"
}
