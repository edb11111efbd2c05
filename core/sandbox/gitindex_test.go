package sandbox

import (
	"bytes"
	"encoding/binary"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestBadIndexEntryReal: the indexes git itself writes (versions 2, 3
// and 4, a split index and its shared part) have no entry the rule
// refuses.
func TestBadIndexEntryReal(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("no git")
	}
	dir := t.TempDir()
	git := func(args ...string) {
		t.Helper()
		cmd := exec.Command("git", append([]string{"-c", "user.name=t", "-c", "user.email=t@t"}, args...)...)
		cmd.Dir = dir
		cmd.Env = []string{"PATH=/usr/bin:/bin", "HOME=" + dir, "GIT_CONFIG_NOSYSTEM=1"}
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v %s", args, err, out)
		}
	}
	git("init", "-q")
	for _, p := range []string{"a", "dir/b", "dir/sub/c", "dir/sub/long-" + strings.Repeat("x", 200), ".gitignore", "ünï"} {
		os.MkdirAll(filepath.Join(dir, filepath.Dir(p)), 0o755)
		os.WriteFile(filepath.Join(dir, p), []byte(p), 0o644)
	}
	git("add", ".")
	check := func(what, file string) {
		t.Helper()
		b, err := os.ReadFile(filepath.Join(dir, ".git", file))
		if err != nil {
			t.Fatal(err)
		}
		if bad, err := badIndexEntry(b, 20); bad != "" || err != nil {
			t.Errorf("%s: %q %v", what, bad, err)
		}
	}
	check("v2", "index")
	os.WriteFile(filepath.Join(dir, "new"), nil, 0o644)
	git("add", "-N", "new") // intent to add: an extended flag, version 3
	check("v3", "index")
	git("update-index", "--index-version", "4")
	check("v4", "index")
	git("update-index", "--index-version", "2")
	git("update-index", "--split-index")
	check("split", "index")
	shared, _ := filepath.Glob(filepath.Join(dir, ".git", "sharedindex.*"))
	if len(shared) == 0 {
		t.Fatal("no shared index")
	}
	check("shared", filepath.Base(shared[0]))
}

// testIndex is an index of the given version (2 or 4) with entries named
// names, each a regular file.
func testIndex(version int, names []string) []byte {
	var b bytes.Buffer
	b.WriteString("DIRC")
	binary.Write(&b, binary.BigEndian, uint32(version))
	binary.Write(&b, binary.BigEndian, uint32(len(names)))
	prev := ""
	for _, n := range names {
		start := b.Len()
		b.Write(make([]byte, 24))
		binary.Write(&b, binary.BigEndian, uint32(0o100644))
		b.Write(make([]byte, 12+20))
		flags := len(n)
		if flags > 0xfff {
			flags = 0xfff
		}
		binary.Write(&b, binary.BigEndian, uint16(flags))
		if version == 4 {
			common := 0
			for common < len(prev) && common < len(n) && prev[common] == n[common] {
				common++
			}
			b.WriteByte(byte(len(prev) - common)) // under 128 in these tests
			b.WriteString(n[common:])
			b.WriteByte(0)
		} else {
			b.WriteString(n)
			pad := (b.Len()-start+8)&^7 - (b.Len() - start)
			b.Write(make([]byte, pad))
		}
		prev = n
	}
	b.Write(make([]byte, 20)) // the checksum
	return b.Bytes()
}

// TestBadIndexEntry: each way out of the worktree an entry could name.
func TestBadIndexEntry(t *testing.T) {
	for _, c := range []struct {
		names []string
		bad   string
	}{
		{[]string{"a", "b/c", "b/d"}, ""},
		{[]string{"a", "/home/u/.bashrc"}, "/home/u/.bashrc"},
		{[]string{"a", "../x"}, "../x"},
		{[]string{"a/../../x"}, "a/../../x"},
		{[]string{".git/config"}, ".git/config"},
		{[]string{"sub/.GIT/hooks/x"}, "sub/.GIT/hooks/x"},
		{[]string{"sub/.git./x"}, "sub/.git./x"},
		{[]string{"git~1/config"}, "git~1/config"},
		{[]string{"a//b"}, "a//b"},
		{[]string{"./a"}, "./a"},
		{[]string{"a", ""}, ""}, // a split index's entry, named by the shared one
	} {
		for _, v := range []int{2, 4} {
			bad, err := badIndexEntry(testIndex(v, c.names), 20)
			want := c.bad
			if err != nil || bad != want {
				t.Errorf("v%d %q: %q %v, want %q", v, c.names, bad, err, want)
			}
		}
	}
	for _, junk := range [][]byte{nil, []byte("DIRC"), append([]byte("DIRC\x00\x00\x00\x05\x00\x00\x00\x01"), make([]byte, 40)...), testIndex(2, []string{"a"})[:50]} {
		if _, err := badIndexEntry(junk, 20); err == nil {
			t.Errorf("%q read as an index", junk)
		}
	}
}

// FuzzBadIndexEntry: whatever the bytes, the reader returns (no panic,
// no endless loop), and an index built of names is judged as its names.
func FuzzBadIndexEntry(f *testing.F) {
	f.Add([]byte(nil), "a", "b/c")
	f.Add(testIndex(4, []string{"x", "../y"}), "../y", ".git/x")
	f.Fuzz(func(t *testing.T, raw []byte, n1, n2 string) {
		badIndexEntry(raw, 20)
		badIndexEntry(raw, 32)
		names := []string{n1, n2}
		for _, n := range names {
			if strings.ContainsRune(n, 0) || len(n) > 100 {
				return
			}
		}
		want := ""
		for _, n := range names {
			if n != "" && !indexPathOK(n, false) {
				want = n
				break
			}
		}
		for _, v := range []int{2, 4} {
			if v == 4 && (len(n1) > 127) {
				continue
			}
			bad, err := badIndexEntry(testIndex(v, names), 20)
			if err != nil || bad != want {
				t.Fatalf("v%d %q: %q %v, want %q", v, names, bad, err, want)
			}
		}
	})
}

// TestIEOTMatches: an entry offset table is kept only where git, reading
// the entries block by block from its offsets, reads those the rule read
// one after the other (a split index's shared part keeps its tables).
func TestIEOTMatches(t *testing.T) {
	base := testIndex(2, []string{"a", "b", "c"})
	body, sum := base[:len(base)-20], base[len(base)-20:]
	var starts []int
	if bad, entries, err := indexEntries(base, 20, &starts); bad != "" || err != nil || entries != len(body) || len(starts) != 3 {
		t.Fatalf("%q %d %v %v", bad, entries, err, starts)
	}
	withIEOT := func(blocks ...[2]int) []byte {
		ext := binary.BigEndian.AppendUint32(nil, 1)
		for _, b := range blocks {
			ext = binary.BigEndian.AppendUint32(ext, uint32(b[0]))
			ext = binary.BigEndian.AppendUint32(ext, uint32(b[1]))
		}
		out := append(append([]byte(nil), body...), "IEOT"...)
		out = binary.BigEndian.AppendUint32(out, uint32(len(ext)))
		return append(append(out, ext...), sum...)
	}
	for _, c := range []struct {
		name   string
		blocks [][2]int
		want   bool
	}{
		{"one block", [][2]int{{starts[0], 3}}, true},
		{"two blocks", [][2]int{{starts[0], 1}, {starts[1], 2}}, true},
		{"a block mid-entry", [][2]int{{starts[0], 1}, {starts[1] + 8, 2}}, false},
		{"short count", [][2]int{{starts[0], 2}}, false},
		{"too many", [][2]int{{starts[0], 4}}, false},
		{"a block again", [][2]int{{starts[0], 2}, {starts[0], 1}}, false},
	} {
		data := withIEOT(c.blocks...)
		if got := ieotMatches(data, len(body), 20, starts); got != c.want {
			t.Errorf("%s: %v, want %v", c.name, got, c.want)
		}
	}
	if !ieotMatches(base, len(body), 20, starts) {
		t.Error("an index with no table")
	}
}
