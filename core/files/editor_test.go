package files_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/harnessd/harnessd/core/files"
)

// memFiles is a Filer over a map: the editor's text work, without a
// sandbox.
type memFiles struct {
	m    map[string]string
	down bool
}

func (f *memFiles) File(_ context.Context, r *files.Request) (*files.Response, error) {
	if f.down {
		return nil, files.ErrUnavailable
	}
	cur, ok := f.m[r.Path]
	switch r.Op {
	case files.OpRead:
		if !ok {
			return &files.Response{Code: files.CodeNotFound, Path: r.Path}, nil
		}
		return &files.Response{Path: r.Path, Type: files.TypeFile, Size: int64(len(cur)), Data: []byte(cur)}, nil
	case files.OpWrite:
		switch {
		case ok && (r.Excl || r.IfSum == "absent"):
			return &files.Response{Code: files.CodeExists, Path: r.Path}, nil
		case ok && r.IfSum != "" && r.IfSum != files.Sum([]byte(cur)):
			return &files.Response{Code: files.CodeChanged, Path: r.Path}, nil
		case !ok && !r.Create:
			return &files.Response{Code: files.CodeNotFound, Path: r.Path}, nil
		}
		f.m[r.Path] = string(r.Data)
		return &files.Response{Path: r.Path, Existed: ok}, nil
	case files.OpRemove:
		delete(f.m, r.Path)
		return &files.Response{Path: r.Path, Existed: ok}, nil
	}
	return nil, errors.New("bad op")
}

func TestEditor(t *testing.T) {
	fs := &memFiles{m: map[string]string{"/w/a": "one\ntwo\nthree", "/w/b": "x\n"}}
	h := &files.History{}
	ed := files.Editor{Files: fs, Cwd: "/w", History: h}
	cases := []struct {
		name string
		run  func() files.Result
		ok   bool
		file string // /w/a afterwards
		has  string // in Output
		diff string // in Diff
	}{
		{"insert at the end of a file without a final newline", func() files.Result {
			r, _ := ed.Do(context.Background(), files.Insert{Path: "a", Line: 3, Text: "four"})
			return r
		}, true, "one\ntwo\nthree\nfour", "     4\tfour\n", "-three\n\\ No newline at end of file\n+three\n+four\n\\ No newline at end of file\n"},
		{"insert at the top", func() files.Result {
			r, _ := ed.Do(context.Background(), files.Insert{Path: "/w/a", Line: 0, Text: "zero\n"})
			return r
		}, true, "zero\none\ntwo\nthree\nfour", "     1\tzero\n", "@@ -1,3 +1,4 @@\n+zero\n one\n"},
		{"near miss on whitespace", func() files.Result {
			r, _ := ed.Do(context.Background(), files.StrReplace{Path: "a", Old: "  two  ", New: "2"})
			return r
		}, false, "zero\none\ntwo\nthree\nfour", "starts on line(s) 3", ""},
		{"replace to delete", func() files.Result {
			r, _ := ed.Do(context.Background(), files.StrReplace{Path: "a", Old: "two\n", New: ""})
			return r
		}, true, "zero\none\nthree\nfour", "     3\tthree\n", "-two\n"},
		{"undo", func() files.Result {
			r, _ := ed.Do(context.Background(), files.Undo{Path: "a"})
			return r
		}, true, "zero\none\ntwo\nthree\nfour", "undone", "+two\n"},
		{"view to the end", func() files.Result {
			r, _ := ed.Do(context.Background(), files.View{Path: "a", FromLine: 4, ToLine: -1})
			return r
		}, true, "zero\none\ntwo\nthree\nfour", "     4\tthree\n     5\tfour\n", ""},
	}
	for _, c := range cases {
		res := c.run()
		if res.OK != c.ok || fs.m["/w/a"] != c.file || !strings.Contains(res.Output, c.has) || !strings.Contains(res.Diff, c.diff) {
			t.Errorf("%s: %+v\nfile %q", c.name, res, fs.m["/w/a"])
		}
	}
	fs.m["/w/a"] = "changed by a command"
	if r, _ := ed.Do(context.Background(), files.Undo{Path: "a"}); !r.OK || fs.m["/w/a"] != "one\ntwo\nthree\nfour" || !strings.Contains(r.Output, "had changed since") {
		t.Errorf("undo after the file changed: %+v %q", r, fs.m["/w/a"])
	}
	fs.down = true
	res, err := ed.Do(context.Background(), files.View{Path: "a"})
	if !errors.Is(err, files.ErrUnavailable) || res.OK || res.Error != "unavailable" || res.Path != "/w/a" {
		t.Errorf("sandbox gone: %+v %v", res, err)
	}
}

// TestHistoryBounds: the undo history keeps HistoryDepth edits a file.
func TestHistoryBounds(t *testing.T) {
	fs := &memFiles{m: map[string]string{"/a": "0"}}
	ed := files.Editor{Files: fs, Cwd: "/", History: &files.History{}}
	for i := 1; i <= files.HistoryDepth+5; i++ {
		prev := fs.m["/a"]
		if r, _ := ed.Do(context.Background(), files.StrReplace{Path: "/a", Old: prev, New: prev + "x"}); !r.OK {
			t.Fatalf("%+v", r)
		}
	}
	n := 0
	for {
		r, _ := ed.Do(context.Background(), files.Undo{Path: "/a"})
		if !r.OK {
			break
		}
		n++
	}
	if n != files.HistoryDepth || fs.m["/a"] != "0"+strings.Repeat("x", 5) {
		t.Errorf("%d undos, file %q", n, fs.m["/a"])
	}
}

// FuzzEditor: every action on any content answers without panicking, an
// edit that says OK did exactly what it says, and one that does not left
// the file alone; a view's numbered lines are the file's.
func FuzzEditor(f *testing.F) {
	f.Add("a\nb\nc\n", "b", "B", 1, 0, 0)
	f.Add("", "x", "", 0, 1, -1)
	f.Add("x\r\ny", "\r\n", "\n", 3, 2, 2)
	f.Add("\xff\x00", "a", "b", 0, 0, 0)
	f.Fuzz(func(t *testing.T, content, old, repl string, line, from, to int) {
		fs := &memFiles{m: map[string]string{"/f": content}}
		ed := files.Editor{Files: fs, Cwd: "/", History: &files.History{}}
		ctx := context.Background()
		r := files.StrReplace{Path: "f", Old: old, New: repl}
		if r.Validate() == nil {
			res, err := ed.Do(ctx, r)
			n := strings.Count(content, old)
			want := content
			if res.OK {
				want = strings.Replace(content, old, repl, 1)
			}
			if err != nil || fs.m["/f"] != want || (res.OK && n != 1) {
				t.Fatalf("str_replace %q -> %q in %q: %+v %v; file %q", old, repl, content, res, err, fs.m["/f"])
			}
			if res.OK {
				if u, _ := ed.Do(ctx, files.Undo{Path: "/f"}); !u.OK || fs.m["/f"] != content {
					t.Fatalf("undo: %+v, file %q", u, fs.m["/f"])
				}
			}
		}
		in := files.Insert{Path: "/f", Line: line, Text: repl}
		if in.Validate() == nil {
			res, _ := ed.Do(ctx, in)
			if res.OK && !strings.Contains(fs.m["/f"], strings.TrimSuffix(repl, "\n")) {
				t.Fatalf("insert %q at %d into %q: file %q", repl, line, content, fs.m["/f"])
			}
			if !res.OK && fs.m["/f"] != content {
				t.Fatalf("a failed insert changed the file: %q", fs.m["/f"])
			}
			fs.m["/f"] = content
		}
		v := files.View{Path: "/f", FromLine: from, ToLine: to}
		if v.Validate() == nil {
			res, err := ed.Do(ctx, v)
			if err != nil {
				t.Fatal(err)
			}
			if res.OK && strings.HasPrefix(res.Output, "Here's") {
				lines := strings.Split(strings.TrimSuffix(content, "\n"), "\n")
				for _, l := range strings.Split(strings.TrimSuffix(res.Output, "\n"), "\n")[1:] {
					var n int
					num, text, ok := strings.Cut(l, "\t")
					if !ok || l == "(the file is empty)" {
						continue
					}
					if _, err := fmt.Sscan(num, &n); err != nil || n < 1 || n > len(lines) || lines[n-1] != text {
						t.Fatalf("view line %q of %q", l, content)
					}
				}
			}
		}
	})
}

// TestHistoryBytes: the undo history holds HistoryBytes in all, the
// oldest edits going first.
func TestHistoryBytes(t *testing.T) {
	fs := &memFiles{m: map[string]string{}}
	ed := files.Editor{Files: fs, Cwd: "/", History: &files.History{}}
	big := strings.Repeat("x", 1<<20)
	const n = 12
	for i := range n {
		p := fmt.Sprintf("/f%d", i)
		fs.m[p] = big
		if r, _ := ed.Do(context.Background(), files.Create{Path: p, Content: "small", Overwrite: true}); !r.OK {
			t.Fatalf("%+v", r)
		}
	}
	kept := 0
	for i := range n {
		if r, _ := ed.Do(context.Background(), files.Undo{Path: fmt.Sprintf("/f%d", i)}); r.OK {
			kept++
			if i < n-files.HistoryBytes>>20 {
				t.Errorf("the edit of /f%d, among the oldest, was kept", i)
			}
		}
	}
	if kept != files.HistoryBytes>>20 {
		t.Errorf("%d edits of 1 MiB kept, want %d", kept, files.HistoryBytes>>20)
	}
}
