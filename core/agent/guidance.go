package agent

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"slices"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"

	"github.com/harnessd/harnessd/core/event"
	pb "github.com/harnessd/harnessd/plugins/proto"
)

// Where repository guidance lives in a workspace, and how much of it a
// run takes.
const (
	GuidanceFile     = "AGENTS.md"
	GuidanceDir      = ".harness/guidance"
	maxGuidanceFile  = 64 << 10
	maxGuidanceTotal = 256 << 10
)

// Guidance is one file of repository guidance.
type Guidance struct {
	Path string // relative to the workspace
	Text string // without its frontmatter
}

// LoadGuidance reads the guidance that applies to a task in a workspace:
// AGENTS.md at its root, always, then each .harness/guidance/*.md in name
// order that is always-on (no triggers) or whose `triggers:` frontmatter
// names a keyword found, case ignored, in the task or the latest user
// message. Files are read through an os.Root, so a symlink cannot lead
// outside the workspace; a file over 64 KiB, or past 256 KiB in all, is
// skipped, and said so in skipped ("path: why").
//
// The workspace's own path must hold no symlink (the daemon's workspaces'
// paths have none, a client's is checked with its symlinks resolved): a
// client who may write one of its parents could otherwise swap that parent
// for a link after the check, and have root read the guidance of a
// directory they cannot reach into their agent's prompt.
func LoadGuidance(workspace, task, userMessage string) (files []Guidance, skipped []string, err error) {
	root, err := openWorkspace(workspace)
	if err != nil {
		return nil, nil, err
	}
	defer root.Close()
	// The daemon reads as root; the workspace's owner is who the files
	// are read for (see readLimited).
	var owner uint32
	if st, err := root.Stat("."); err == nil {
		if sys, ok := st.Sys().(*syscall.Stat_t); ok {
			owner = sys.Uid
		}
	}
	var names []string
	if _, err := root.Lstat(GuidanceFile); err == nil {
		names = append(names, GuidanceFile)
	}
	// O_NONBLOCK and O_DIRECTORY: what the agent left in the workspace
	// may be a FIFO, whose open would wait for a writer forever.
	if d, err := root.OpenFile(GuidanceDir, os.O_RDONLY|syscall.O_NONBLOCK|syscall.O_DIRECTORY, 0); err == nil {
		ents, _ := d.ReadDir(-1)
		d.Close()
		var md []string
		for _, e := range ents {
			if strings.HasSuffix(e.Name(), ".md") && !e.IsDir() {
				md = append(md, path.Join(GuidanceDir, e.Name()))
			}
		}
		slices.Sort(md)
		names = append(names, md...)
	}
	match := strings.ToLower(task + "\n" + userMessage)
	total := 0
	for _, name := range names {
		text, err := readLimited(root, name, owner)
		if err != nil {
			skipped = append(skipped, name+": "+err.Error())
			continue
		}
		body, triggers := frontmatter(text)
		if name != GuidanceFile && len(triggers) > 0 && !slices.ContainsFunc(triggers, func(k string) bool {
			return strings.Contains(match, strings.ToLower(k))
		}) {
			continue // not triggered: not loaded, not a skip
		}
		if total+len(body) > maxGuidanceTotal {
			skipped = append(skipped, fmt.Sprintf("%s: over the %d KiB of guidance a run takes", name, maxGuidanceTotal>>10))
			continue
		}
		total += len(body)
		files = append(files, Guidance{Path: name, Text: body})
	}
	return files, skipped, nil
}

// openWorkspace opens the directory at path as an os.Root, refusing a
// symlink anywhere on its path (ELOOP).
func openWorkspace(path string) (*os.Root, error) {
	how := unix.OpenHow{Flags: unix.O_PATH | unix.O_DIRECTORY | unix.O_CLOEXEC, Resolve: unix.RESOLVE_NO_SYMLINKS | unix.RESOLVE_NO_MAGICLINKS}
	var fd int
	var err error
	for {
		fd, err = unix.Openat2(unix.AT_FDCWD, path, &how)
		if err != unix.EINTR && err != unix.EAGAIN {
			break
		}
	}
	if err != nil {
		return nil, &fs.PathError{Op: "open", Path: path, Err: err}
	}
	defer unix.Close(fd)
	// The descriptor's own directory, whatever its path leads to now.
	return os.OpenRoot(fmt.Sprintf("/proc/self/fd/%d", fd))
}

// readLimited reads a regular file of at most maxGuidanceFile bytes.
// It reads only a file the workspace's owner could read by its mode bits
// (theirs, or readable by all): in a shared directory, a file of someone
// else's that they may not read must not reach their agent's prompt
// through the daemon, which reads as root.
func readLimited(root *os.Root, name string, owner uint32) (string, error) {
	// O_NONBLOCK: a FIFO (the agent can make one) opens at once, and is
	// then refused as not a regular file, instead of hanging the run.
	f, err := root.OpenFile(name, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		var pe *fs.PathError
		if errors.As(err, &pe) {
			err = pe.Err
		}
		return "", err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return "", err
	}
	if !st.Mode().IsRegular() {
		return "", errors.New("not a regular file")
	}
	if sys, ok := st.Sys().(*syscall.Stat_t); ok && sys.Uid != owner && st.Mode().Perm()&0o004 == 0 {
		return "", fmt.Errorf("not the workspace owner's (uid %d) and not readable by all", owner)
	}
	b, err := io.ReadAll(io.LimitReader(f, maxGuidanceFile+1))
	if err != nil {
		return "", err
	}
	if len(b) > maxGuidanceFile {
		return "", fmt.Errorf("larger than %d KiB", maxGuidanceFile>>10)
	}
	return string(b), nil
}

// frontmatter splits a leading "---" block off text and returns the body
// and the block's triggers: `triggers: [a, b]` or a list of "- a" lines
// under `triggers:`.
func frontmatter(text string) (body string, triggers []string) {
	rest, ok := strings.CutPrefix(text, "---\n")
	if !ok {
		return text, nil
	}
	block, body, ok := strings.Cut(rest, "\n---")
	if !ok {
		return text, nil
	}
	body = strings.TrimPrefix(strings.TrimPrefix(body, "\r"), "\n")
	sc := bufio.NewScanner(strings.NewReader(block))
	inList := false
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if v, ok := strings.CutPrefix(line, "triggers:"); ok {
			v = strings.TrimSpace(v)
			inList = v == ""
			if strings.HasPrefix(v, "[") && strings.HasSuffix(v, "]") {
				for _, k := range strings.Split(v[1:len(v)-1], ",") {
					if k = unquote(k); k != "" {
						triggers = append(triggers, k)
					}
				}
			} else if v != "" {
				triggers = append(triggers, unquote(v))
			}
			continue
		}
		if inList {
			if k, ok := strings.CutPrefix(line, "- "); ok {
				if k = unquote(k); k != "" {
					triggers = append(triggers, k)
				}
				continue
			}
			inList = line == ""
		}
	}
	return body, triggers
}

func unquote(s string) string {
	s = strings.TrimSpace(s)
	if len(s) >= 2 && (s[0] == '"' && s[len(s)-1] == '"' || s[0] == '\'' && s[len(s)-1] == '\'') {
		s = s[1 : len(s)-1]
	}
	return strings.TrimSpace(s)
}

// loadGuidance loads the run's guidance and records guidance_loaded when
// there is any.
func (r *run) loadGuidance() {
	ws, err := r.c.opts.Sessions.Workspace(r.session)
	if err != nil {
		return
	}
	// The latest user message, for triggers.
	_ = r.c.opts.Sessions.Events(r.ctx, r.session, 0, false, func(ev event.Event) error {
		if m, ok := ev.Payload.(event.Message); ok && ev.Source == event.SourceUser && m.Text != r.c.opts.Nudge {
			r.lastUserMessage = m.Text
		}
		return nil
	})
	files, skipped, err := LoadGuidance(ws, r.task, r.lastUserMessage)
	if err != nil {
		r.log.Warn("guidance", "err", err)
		return
	}
	if len(files) == 0 && len(skipped) == 0 {
		return
	}
	rec := GuidanceLoaded{Run: r.id, Files: []string{}, Skipped: skipped}
	for _, f := range files {
		r.guidance = append(r.guidance, &pb.Guidance{Path: f.Path, Text: f.Text})
		rec.Files = append(rec.Files, f.Path)
		rec.Bytes += len(f.Text)
	}
	if _, err := r.record(r.ctx, rec); err != nil {
		r.log.Warn("guidance_loaded not recorded", "err", err)
	}
}

// oneLine shortens s to one line of at most n bytes, for logs.
func oneLine(s string, n int) string {
	s = strings.Join(strings.Fields(s), " ")
	if len(s) > n {
		s = s[:n] + "…"
	}
	return s
}
