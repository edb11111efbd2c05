package sandbox

import (
	"path"
	"strings"
)

// A repository's config can name files outside its .git that git on the
// host then reads or runs: include.path and includeIf.<cond>.path (more
// config, which can set core.fsmonitor, aliases, ...), and core.hooksPath
// (the hooks). Where those lie in the workspace, the agent could write
// them, so the init pins them as it pins the control files (see
// configPaths and protectWorkspace).

// configRef is a path a git config names, and what it is.
type configRef struct {
	Path  string // as written, unquoted
	Hooks bool   `json:",omitempty"` // core.hooksPath (a directory, relative to the worktree)
	Exec  bool   `json:",omitempty"` // a program a command runs (a file, relative to the worktree: see commandPaths)
	// Neither: an include (a file, relative to the config's directory).
}

// maxConfigRefs bounds what one config may name (and so what the init
// pins for it).
const maxConfigRefs = 64

// configPaths reads a git config file's text and returns the paths it
// names in include.path, includeIf.*.path and core.hooksPath, and the
// programs its commands run from a path (commandKey, commandPaths), in
// order (init.templateDir too: its hooks are copied into every
// repository made). It follows git's syntax (sections with or without a subsection, keys
// case-insensitive, quotes, backslash escapes and continuations, # and ;
// comments) as far as those keys need, and never fails: a line it cannot
// read is skipped, as git would refuse the whole file.
func configPaths(text string) []configRef {
	var refs []configRef
	section := ""
	text = strings.TrimPrefix(text, "\ufeff") // git skips a byte order mark
	for rest := text; rest != "" && len(refs) < maxConfigRefs; {
		var line string
		line, rest = nextConfigLine(rest)
		line = strings.TrimLeft(line, " \t\r")
		if line == "" || line[0] == '#' || line[0] == ';' {
			continue
		}
		if line[0] == '[' {
			name, after, ok := configSection(line)
			if !ok {
				section = ""
				continue
			}
			section = name
			line = strings.TrimLeft(after, " \t\r")
			if line == "" || line[0] == '#' || line[0] == ';' {
				continue
			}
		}
		key, raw, ok := strings.Cut(line, "=")
		if !ok {
			continue // a key with no value (a boolean): no path
		}
		key = strings.ToLower(strings.TrimRight(key, " \t\r"))
		value, full := configValue(raw, rest)
		rest = full
		switch {
		case section == "include" && key == "path",
			strings.HasPrefix(section, "includeif.") && key == "path":
			refs = append(refs, configRef{Path: value})
		case section == "core" && key == "hookspath",
			section == "init" && key == "templatedir": // its hooks/ is copied into each new repository
			refs = append(refs, configRef{Path: value, Hooks: true})
		case commandKey(section, key):
			for _, p := range commandPaths(value) {
				refs = append(refs, configRef{Path: p, Exec: true})
			}
		}
	}
	return refs
}

// nextConfigLine splits off the first line of s.
func nextConfigLine(s string) (line, rest string) {
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		return s[:i], s[i+1:]
	}
	return s, ""
}

// configSection reads a section header, "[name]", `[name "sub"]` or the
// old "[name.sub]", and returns the section as "name" or "name.sub"
// (name lower-cased; only whether there is a subsection matters here),
// and what follows the header on its line.
func configSection(line string) (name, after string, ok bool) {
	end := strings.IndexByte(line, ']')
	if end < 0 {
		return "", "", false
	}
	head := line[1:end]
	after = line[end+1:]
	if sp := strings.IndexAny(head, " \t"); sp >= 0 {
		// [name "sub"]: the subsection may itself hold a ']' when quoted.
		name = strings.ToLower(head[:sp])
		q := strings.TrimLeft(line[1+sp:], " \t")
		if q == "" || q[0] != '"' {
			return "", "", false
		}
		for i := 1; i < len(q); i++ {
			switch q[i] {
			case '\\':
				i++
			case '"':
				if i+1 < len(q) && q[i+1] == ']' {
					return name + ".sub", q[i+2:], name != ""
				}
				return "", "", false
			}
		}
		return "", "", false
	}
	name = strings.ToLower(head)
	if i := strings.IndexByte(name, '.'); i >= 0 {
		name = name[:i] + ".sub"
	}
	return name, after, name != ""
}

// configValue reads a value from raw (the text after '=' on its line),
// taking continuation lines from rest when a line ends in a backslash;
// it returns the value and what is left of rest.
func configValue(raw, rest string) (string, string) {
	var b strings.Builder
	quoted := false
	pending := 0 // trailing blanks outside quotes, dropped at the end
	raw = strings.TrimLeft(raw, " \t")
	for {
		i := 0
		for ; i < len(raw); i++ {
			c := raw[i]
			switch {
			case c == '\r' && i == len(raw)-1:
			case c == '"':
				quoted = !quoted
				pending = 0
			case !quoted && (c == '#' || c == ';'):
				return trimPending(b.String(), pending), rest
			case c == '\\':
				if i == len(raw)-1 || i == len(raw)-2 && raw[i+1] == '\r' {
					// A continuation: the value goes on at the next line.
					goto next
				}
				i++
				switch raw[i] {
				case 'n':
					b.WriteByte('\n')
				case 't':
					b.WriteByte('\t')
				case 'b':
					s := b.String()
					if s != "" {
						b.Reset()
						b.WriteString(s[:len(s)-1])
					}
				default:
					b.WriteByte(raw[i])
				}
				pending = 0
			case !quoted && (c == ' ' || c == '\t'):
				if b.Len() > 0 {
					b.WriteByte(c)
					pending++
				}
			default:
				b.WriteByte(c)
				pending = 0
			}
		}
		return trimPending(b.String(), pending), rest
	next:
		if rest == "" {
			return trimPending(b.String(), pending), rest
		}
		raw, rest = nextConfigLine(rest)
	}
}

func trimPending(s string, n int) string { return s[:len(s)-n] }

// commandKey reports whether section.key (as configPaths sees them: a
// subsection is ".sub") holds a command git runs: a program or a shell
// snippet, run from the top of the worktree, so that a relative path in
// it names a file there.
func commandKey(section, key string) bool {
	switch section {
	case "core":
		switch key {
		case "fsmonitor", "sshcommand", "editor", "pager", "askpass", "gitproxy", "alternaterefscommand":
			return true
		}
	case "sequence":
		return key == "editor"
	case "diff":
		return key == "external"
	case "diff.sub":
		return key == "command" || key == "textconv"
	case "filter.sub":
		return key == "clean" || key == "smudge" || key == "process"
	case "merge.sub":
		return key == "driver"
	case "difftool.sub", "mergetool.sub", "browser.sub", "trailer.sub", "man.sub", "guitool.sub", "tar.sub":
		return key == "cmd" || key == "path" || key == "command"
	case "lfs.sub":
		// git-lfs's lfs.customtransfer.<name>.path, lfs.extension.<name>.clean
		return key == "path" || key == "clean" || key == "smudge"
	case "hook.sub":
		return key == "command" // config-based hooks (git 2.54)
	case "svn":
		return key == "authorsprog"
	case "instaweb":
		return key == "httpd"
	case "imap":
		return key == "tunnel"
	case "gpg", "gpg.sub":
		return key == "program" || key == "defaultkeycommand"
	case "credential", "credential.sub":
		return key == "helper"
	case "remote.sub":
		return key == "uploadpack" || key == "receivepack"
	case "submodule.sub":
		return key == "update"
	case "interactive":
		return key == "difffilter"
	case "alias", "pager", "sendemail", "sendemail.sub", "web":
		return true // alias.X = !cmd, pager.CMD, sendemail.*cmd, web.browser
	}
	return false
}

// configTarget resolves a configRef read from a config file in directory
// confDir, of the repository whose worktree's top is worktree (both
// relative to the workspace), for a workspace at wsHost on the host:
// the path relative to the workspace, or false where it is not in the
// workspace (or cannot be known: ~ and %(prefix) paths, which are the
// user's, outside).
func configTarget(r configRef, confDir, worktree, wsHost string) (string, bool) {
	p := r.Path
	switch {
	case p == "" || strings.HasPrefix(p, "~") || strings.HasPrefix(p, "%("):
		return "", false
	case path.IsAbs(p):
		ws := path.Clean(wsHost)
		if path.Clean(p) == ws {
			return ".", true
		}
		rel, ok := strings.CutPrefix(path.Clean(p), strings.TrimSuffix(ws, "/")+"/")
		if !ok {
			return "", false
		}
		p = rel
	case r.Hooks || r.Exec:
		p = path.Join(worktree, p) // where hooks and commands run
	default:
		p = path.Join(confDir, p) // relative to the including file
	}
	p = path.Clean(p)
	if p == ".." || strings.HasPrefix(p, "../") {
		// It leaves the workspace, and may come back into it: ../proj/x
		// from the top of /home/u/proj.
		rel, ok := strings.CutPrefix(path.Join(wsHost, p), strings.TrimSuffix(path.Clean(wsHost), "/")+"/")
		if !ok {
			return "", false
		}
		p = rel
	}
	return p, true
}

// repoWorktree is the top of the worktree of the repository whose git
// directory is gitdir: the directory above a .git, a bare one's own.
func repoWorktree(gitdir string) string {
	if path.Base(gitdir) == ".git" {
		return path.Dir(gitdir)
	}
	return gitdir
}
