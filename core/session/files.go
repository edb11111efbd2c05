package session

import (
	"context"

	"github.com/harnessd/harnessd/core/event"
	"github.com/harnessd/harnessd/core/files"
	"github.com/harnessd/harnessd/core/sandbox"
	"github.com/harnessd/harnessd/core/trim"
)

// Files is where the session's file actions are performed: its sandbox's
// init, or, without a sandbox (driver "none"), the daemon's process on
// the host. Nil when the sandbox offers no file service.
func (s *Session) Files() files.Filer {
	if s.sb == nil {
		return sandbox.LocalFiles()
	}
	if f, ok := s.sb.(files.Filer); ok {
		return f
	}
	return nil
}

// Cwd is the shell's working directory as of its last prompt, where a
// relative path in a file action starts; the workdir before any. It
// never waits for a running command.
func (s *Session) Cwd() string {
	if c := s.term.Cwd(); c != "" {
		return c
	}
	return s.Workdir()
}

// FileHistory is the session's undo history of file edits. It is the
// daemon's, not the sandbox's, so a shell rebuild (a new init) keeps it.
func (s *Session) FileHistory() *files.History { return &s.fileHistory }

// TrimText trims a long observation text (a file view) as a command's
// output is trimmed, keeping the full text in the session's output store
// under the returned Trimmed's output id.
func (s *Session) TrimText(ctx context.Context, text string) (string, *event.Trimmed) {
	// Most views fit: those are neither trimmed nor stored.
	probe := trim.New(s.trim, nil)
	_, _ = probe.Write([]byte(text))
	if r := probe.Result(""); !r.Trimmed && r.LinesCut == 0 {
		return text, nil
	}
	spill := &lazySpill{ctx: ctx, session: s.id, store: s.outputs, limit: -1}
	if s.maxOut > 0 {
		spill.limit = s.maxOut
	}
	tr := trim.New(s.trim, spill)
	_, _ = tr.Write([]byte(text))
	id, err := spill.close()
	if err != nil {
		s.log.Warn("full file view not kept", "session", s.id, "err", err)
	}
	s.kept.Add(spill.n)
	res := tr.Result(id)
	if !res.Trimmed && res.LinesCut == 0 {
		return text, nil
	}
	return res.Text, &event.Trimmed{LinesTotal: res.LinesTotal, LinesOmitted: res.LinesOmitted, BytesOmitted: res.BytesOmitted, OutputID: id}
}
