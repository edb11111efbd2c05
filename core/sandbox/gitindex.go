package sandbox

import (
	"bytes"
	"crypto/sha1"
	"crypto/sha256"
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
	bad, _, err := indexEntries(data, hashLen, nil)
	return bad, err
}

// indexEntries is badIndexEntry, and where the entries end (the first
// extension, or the checksum); with starts, it appends where each entry
// starts.
func indexEntries(data []byte, hashLen int, starts *[]int) (string, int, error) {
	if len(data) < 12+hashLen || string(data[:4]) != "DIRC" {
		return "", 0, errIndex
	}
	version := binary.BigEndian.Uint32(data[4:8])
	if version < 2 || version > 4 {
		return "", 0, fmt.Errorf("%w: version %d", errIndex, version)
	}
	count := binary.BigEndian.Uint32(data[8:12])
	end := len(data) - hashLen // the trailing checksum
	off := 12
	var prev []byte
	for i := uint32(0); i < count; i++ {
		start := off
		if starts != nil {
			*starts = append(*starts, start)
		}
		fixed := 40 + hashLen // times, dev, ino, mode, uid, gid, size; the object id
		if off+fixed+2 > end {
			return "", 0, errIndex
		}
		mode := binary.BigEndian.Uint32(data[off+24 : off+28])
		flags := binary.BigEndian.Uint16(data[off+fixed : off+fixed+2])
		off += fixed + 2
		if flags&0x4000 != 0 { // extended flags
			if version < 3 || off+2 > end {
				return "", 0, errIndex
			}
			off += 2
		}
		// The name's length is the flags' (git's create_from_disk),
		// unless it is 0xfff: then the name runs to its NUL. Git steps to
		// the next entry by that length, whatever NULs the name holds.
		namelen := int(flags & 0x0fff)
		var name []byte
		if version == 4 {
			strip, n := indexVarint(data[off:end])
			if n == 0 || strip > uint64(len(prev)) {
				return "", 0, errIndex
			}
			off += n
			keep := len(prev) - int(strip)
			if namelen == 0x0fff {
				nul := bytes.IndexByte(data[off:end], 0)
				if nul < 0 {
					return "", 0, errIndex
				}
				namelen = keep + nul
			}
			rest := namelen - keep
			if rest < 0 || off+rest+1 > end || data[off+rest] != 0 {
				return "", 0, errIndex
			}
			name = append(append([]byte(nil), prev[:keep]...), data[off:off+rest]...)
			off += rest + 1
		} else {
			if namelen == 0x0fff {
				nul := bytes.IndexByte(data[off:end], 0)
				if nul < 0 {
					return "", 0, errIndex
				}
				namelen = nul
			}
			if off+namelen > end {
				return "", 0, errIndex
			}
			name = data[off : off+namelen]
			// Entries are padded with NULs to a multiple of 8 bytes.
			off = start + (off-start+namelen+8)&^7
			if off > end {
				return "", 0, errIndex
			}
		}
		if bytes.IndexByte(name, 0) >= 0 {
			// Git would take the name to its first NUL, and step on by
			// the whole: no entry git makes.
			return string(bytes.ReplaceAll(name, []byte{0}, []byte(`\0`))), 0, nil
		}
		// An empty name is a split index's entry that takes its name
		// from the shared index (sharedindex.*, checked as an index of
		// its own).
		if len(name) > 0 && !indexPathOK(string(name), mode&0o170000 == 0o040000) {
			return string(name), 0, nil
		}
		prev = name
	}
	return "", off, nil
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
// Nor one that starts with - or +, which git would make but hands, as
// it is, to the tools difftool and mergetool run (vimdiff: vim takes
// "+!sh x" for a command, "-Sx" for a script to source).
func indexPathOK(path string, sparseDir bool) bool {
	if path != "" && (path[0] == '-' || path[0] == '+') {
		return false
	}
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

// derivedExtensions are the index extensions git derives from the
// entries (and rebuilds when they are gone) but trusts when it finds
// them: the cache-tree (TREE: a commit takes its trees as they are, so
// one the agent wrote would have the user's next commit hold what they
// never staged), the untracked cache, the fsmonitor's token, and the
// offset tables by which git may read the entries in threads from other
// places than one after the other (EOIE, IEOT).
var derivedExtensions = map[string]bool{"TREE": true, "UNTR": true, "FSMN": true, "EOIE": true, "IEOT": true}

// indexWithoutDerived is the index data (whose entries end at entries)
// without its derivedExtensions, with the checksum made again (left
// zero where it was: index.skipHash), and which it dropped; none
// dropped: data as it is. errIndex if its extensions do not read.
func indexWithoutDerived(data []byte, entries, hashLen int) ([]byte, []string, error) {
	end := len(data) - hashLen
	out := append([]byte(nil), data[:entries]...)
	var dropped []string
	for off := entries; off < end; {
		if off+8 > end {
			return nil, nil, errIndex
		}
		sig := string(data[off : off+4])
		size := int(binary.BigEndian.Uint32(data[off+4 : off+8]))
		if size < 0 || size > end-off-8 {
			return nil, nil, errIndex
		}
		next := off + 8 + size
		if derivedExtensions[sig] {
			dropped = append(dropped, sig)
		} else {
			out = append(out, data[off:next]...)
		}
		off = next
	}
	if len(dropped) == 0 {
		return data, nil, nil
	}
	if trailer := data[end:]; bytes.Count(trailer, []byte{0}) == len(trailer) {
		return append(out, trailer...), dropped, nil
	}
	if hashLen == 32 {
		sum := sha256.Sum256(out)
		return append(out, sum[:]...), dropped, nil
	}
	sum := sha1.Sum(out)
	return append(out, sum[:]...), dropped, nil
}

// ieotMatches reports whether the index data's entry offset table
// (IEOT, by which git may read its entries in threads, block by block
// from the offsets it gives), if it has one, gives the offsets at which
// its entries start (starts, read one after the other) and their
// count: else git would read other entries than the index rule did.
func ieotMatches(data []byte, entries, hashLen int, starts []int) bool {
	end := len(data) - hashLen
	for off := entries; off+8 <= end; {
		sig := string(data[off : off+4])
		size := int(binary.BigEndian.Uint32(data[off+4 : off+8]))
		if size < 0 || size > end-off-8 {
			return false
		}
		if sig == "IEOT" {
			t := data[off+8 : off+8+size]
			if len(t) < 4 || (len(t)-4)%8 != 0 || binary.BigEndian.Uint32(t) != 1 {
				return false
			}
			k := 0
			for i := 4; i < len(t); i += 8 {
				at, nr := int(binary.BigEndian.Uint32(t[i:])), int(binary.BigEndian.Uint32(t[i+4:]))
				if k >= len(starts) || at != starts[k] || nr < 0 || nr > len(starts)-k {
					return false
				}
				k += nr
			}
			return k == len(starts)
		}
		off += 8 + size
	}
	return true
}
