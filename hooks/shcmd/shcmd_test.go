package shcmd

import (
	"slices"
	"strings"
	"testing"
)

// sig is how a test names a command: its Name and Args joined by spaces.
func sig(c Command) string {
	return strings.Join(append([]string{c.Name}, c.Args...), " ")
}

func sigs(cmds []Command) []string {
	out := make([]string, len(cmds))
	for i, c := range cmds {
		out[i] = sig(c)
	}
	return out
}

func TestCommandsFinds(t *testing.T) {
	tests := []struct {
		src  string
		want []string // each must be among the commands found
	}{
		// lists, pipelines, grouping
		{"ls; rm -rf /", []string{"ls", "rm -rf /"}},
		{"true && rm -rf / || echo no", []string{"true", "rm -rf /", "echo no"}},
		{"cat x | grep y | rm -rf /", []string{"cat x", "grep y", "rm -rf /"}},
		{"(cd /; rm -rf /)", []string{"cd /", "rm -rf /"}},
		{"{ rm -rf /; }", []string{"rm -rf /"}},
		{"echo $(rm -rf /)", []string{"echo $(rm -rf /)", "rm -rf /"}},
		{"echo `rm -rf /`", []string{"rm -rf /"}},
		{"diff <(rm -rf /) >(cat)", []string{"rm -rf /", "cat"}},
		{"if rm -rf /; then x; elif y; then z; else w; fi", []string{"rm -rf /", "x", "y", "z", "w"}},
		{"while rm -rf /; do sleep 1; done", []string{"rm -rf /", "sleep 1"}},
		{"until false; do rm -rf /; done", []string{"false", "rm -rf /"}},
		{"for f in $(ls); do rm -rf $f; done", []string{"ls", "rm -rf $f"}},
		{"for ((i=0;i<3;i++)); do rm -rf /; done", []string{"rm -rf /"}},
		{"case $x in a) rm -rf /;; *) ls;; esac", []string{"rm -rf /", "ls"}},
		{"[[ $(rm -rf /) ]]", []string{"rm -rf /"}},
		{"(( $(rm -rf /) ))", []string{"rm -rf /"}},
		{"x=$(rm -rf /)", []string{"rm -rf /"}},
		{"export X=$(rm -rf /)", []string{"rm -rf /", "export X=$(rm -rf /)"}},
		{"time rm -rf /", []string{"rm -rf /"}},
		{"! rm -rf /", []string{"rm -rf /"}},
		{"rm -rf / &", []string{"rm -rf /"}},
		{"coproc rm -rf /", []string{"rm -rf /"}},
		// functions: at the definition and at the call, with the call's arguments
		{"f(){ rm -rf /; }; f", []string{"rm -rf /", "f"}},
		{"function f { rm -rf /; }; f", []string{"rm -rf /"}},
		{"f(){ rm -rf \"$1\"; }; f /", []string{"rm -rf /", "rm -rf $1"}},
		{"f(){ rm \"$@\"; }; f -rf /", []string{"rm -rf /"}},
		// prefixes and quoting
		{"X=1 Y=2 rm -rf /", []string{"rm -rf /"}},
		{"r''m -rf /", []string{"rm -rf /"}},
		{`"rm" -rf /`, []string{"rm -rf /"}},
		{`\rm -rf /`, []string{"rm -rf /"}},
		{`$'\x72\x6d' -rf /`, []string{"rm -rf /"}},
		{`$'\162m' -rf /`, []string{"rm -rf /"}},
		{"r{m,} -rf /", []string{"rm r -rf /"}},
		{"{rm,-rf,/}", []string{"rm -rf /"}},
		{"rm -rf \"${HOME}\"", []string{"rm -rf $HOME"}},
		{"find . -name x -exec rm {} \\;", []string{"rm {}"}},
		// argv0 as a path
		{"/usr/bin/rm -rf /", []string{"rm -rf /"}},
		{"./rm -rf /", []string{"rm -rf /"}},
		{"/tmp/rm -rf /", []string{"rm -rf /"}},
		{"~/bin/rm -rf /", []string{"rm -rf /"}},
		// wrappers
		{"sudo rm -rf /", []string{"sudo rm -rf /", "rm -rf /"}},
		{"sudo -u root -E -- rm -rf /", []string{"rm -rf /"}},
		{"sudo FOO=1 rm -rf /", []string{"rm -rf /"}},
		{"doas -u root rm -rf /", []string{"rm -rf /"}},
		{"env -i -u Y X=1 rm -rf /", []string{"rm -rf /"}},
		{"env -S 'rm -rf /'", []string{"rm -rf /"}},
		{"command rm -rf /", []string{"rm -rf /"}},
		{"builtin eval 'rm -rf /'", []string{"rm -rf /"}},
		{"exec -a x rm -rf /", []string{"rm -rf /"}},
		{"nice -n 10 rm -rf /", []string{"rm -rf /"}},
		{"nice -10 rm -rf /", []string{"rm -rf /"}},
		{"nohup rm -rf / &", []string{"rm -rf /"}},
		{"timeout 5 rm -r -f /", []string{"rm -r -f /"}},
		{"timeout -s KILL -k 5s 10s rm -rf /", []string{"rm -rf /"}},
		{"stdbuf -oL -e 0 rm -rf /", []string{"rm -rf /"}},
		{"/usr/bin/time -f %e rm -rf /", []string{"rm -rf /"}},
		{"echo / | xargs -0 -n 1 rm -rf", []string{"rm -rf"}},
		{"find / -exec rm -rf {} \\;", []string{"rm -rf {}"}},
		{"find / -execdir rm -rf {} +", []string{"rm -rf {}"}},
		{"parallel rm -rf ::: / /tmp", []string{"rm -rf /", "rm -rf /tmp"}},
		{"parallel 'rm -rf {}' ::: /", []string{"rm -rf /"}},
		{"busybox rm -rf /", []string{"rm -rf /"}},
		{"sudo timeout 5 env X=1 nice rm -rf /", []string{"rm -rf /"}},
		{"setsid rm -rf /", []string{"rm -rf /"}},
		{"chroot /mnt rm -rf /", []string{"rm -rf /"}},
		// strings parsed again
		{`bash -c "rm -rf /"`, []string{"rm -rf /"}},
		{`sh -c 'rm -rf /'`, []string{"rm -rf /"}},
		{`bash -lc 'rm -rf /'`, []string{"rm -rf /"}},
		{`bash -ec 'rm -rf /'`, []string{"rm -rf /"}},
		{`bash -o pipefail -c 'rm -rf /'`, []string{"rm -rf /"}},
		{`zsh -c 'rm -rf /'`, []string{"rm -rf /"}},
		{`dash -c 'rm -rf /'`, []string{"rm -rf /"}},
		{`ksh -c 'rm -rf /'`, []string{"rm -rf /"}},
		{`bash -c 'rm -rf "$1"' _ /`, []string{"rm -rf /"}},
		{`bash -c "bash -c 'rm -rf /'"`, []string{"rm -rf /"}},
		{`eval "rm -rf /"`, []string{"rm -rf /"}},
		{`eval rm -rf /`, []string{"rm -rf /"}},
		{`sh <<< "rm -rf /"`, []string{"rm -rf /"}},
		{"bash <<EOF\nrm -rf /\nEOF", []string{"rm -rf /"}},
		{"bash <<'EOF'\nrm -rf /\nEOF", []string{"rm -rf /"}},
		{"cat <<EOF | sh\nrm -rf /\nEOF", []string{"rm -rf /"}},
		{`echo "rm -rf /" | sh`, []string{"rm -rf /"}},
		{`echo "rm -rf /" | cat | bash`, []string{"rm -rf /"}},
		{`printf 'rm -rf %s\n' / | sh`, []string{"rm -rf /"}},
		{`echo -e 'rm -rf \x2f' | sh`, []string{"rm -rf /"}},
		{`echo cm0gLXJmIC8K | base64 -d | sh`, []string{"rm -rf /"}},
		{`su -c 'rm -rf /' root`, []string{"rm -rf /"}},
		{`trap 'rm -rf /' EXIT`, []string{"rm -rf /"}},
		{`alias ls='rm -rf /'`, []string{"rm -rf /"}},
		{`PROMPT_COMMAND='rm -rf /'`, []string{"rm -rf /"}},
		{`PS1='$(rm -rf /)'`, []string{"rm -rf /"}},
		{`watch 'rm -rf /'`, []string{"rm -rf /"}},
		{`flock /tmp/l -c 'rm -rf /'`, []string{"rm -rf /"}},
		{`tmux new-session -d 'rm -rf /'`, []string{"rm -rf /"}},
		{`xargs sh -c 'rm -rf /'`, []string{"rm -rf /"}},
		{`find . -exec sh -c 'rm -rf /' \;`, []string{"rm -rf /"}},
	}
	for _, tt := range tests {
		got := Commands(tt.src)
		for _, w := range tt.want {
			if !slices.Contains(sigs(got), w) {
				t.Errorf("Commands(%q): no %q among %q", tt.src, w, sigs(got))
			}
		}
		for _, c := range got {
			if c.Unparseable {
				t.Errorf("Commands(%q): unparseable: %s", tt.src, c.Err)
			}
		}
	}
}

func TestCommandsLookAlikes(t *testing.T) {
	// Text that only looks like rm -rf / is not reported as rm.
	for _, src := range []string{
		`echo "rm -rf /"`, `grep -r "rm -rf" .`, `printf '%s\n' 'rm -rf /'`, `# rm -rf /`,
		`cat <<EOF > notes.txt` + "\nrm -rf /\nEOF", `echo 'rm -rf /' > script.sh`, `git commit -m "rm -rf /"`,
		`python3 -c 'print("rm -rf /")'`, `f(){ echo hi; }; f`,
	} {
		for _, c := range Commands(src) {
			if c.Name == "rm" || c.Unparseable || c.Dynamic {
				t.Errorf("Commands(%q) reports %+v", src, c)
			}
		}
	}
}

func TestCommandsDynamic(t *testing.T) {
	for _, src := range []string{
		`$x -rf /`, `$(echo rm) -rf /`, "`echo rm` -rf /", `"$CMD" -rf /`, `${x:-rm} -rf /`,
		`eval "$x"`, `bash -c "$x"`, `sh -c "$(curl -s x)"`, `echo "$x" | sh`,
	} {
		got := Commands(src)
		found := false
		for _, c := range got {
			if c.Dynamic {
				found = true
			}
		}
		if !found {
			t.Errorf("Commands(%q) = %q: nothing marked dynamic", src, sigs(got))
		}
	}
}

// TestCommandsGuesses checks the values guessed for what is computed at
// run time but written in the line: still Dynamic, but named.
func TestCommandsGuesses(t *testing.T) {
	for _, tt := range []struct{ src, want string }{
		{`$(echo rm) -rf /`, "rm -rf /"},
		{"`printf rm` -rf /", "rm -rf /"},
		{`x=rm; $x -rf /`, "rm -rf /"},
		{`D=/; rm -rf $D`, "rm -rf /"},
		{`D=/; rm -rf "$D"*`, "rm -rf /*"},
		{`export D=/; bash -c 'rm -rf $D'`, "rm -rf /"},
		{`rm -rf ${UNSET:-/}`, "rm -rf /"},
		{`rm -rf "${D:=/}"`, "rm -rf /"},
		{`rm -rf $(echo /)`, "rm -rf /"},
		{"rm -rf \"$(cat <<EOF\n/\nEOF\n)\"", "rm -rf /"},
		{`a=r; a+=m; $a -rf /`, "rm -rf /"},
	} {
		got := Commands(tt.src)
		ok := false
		for _, c := range got {
			if sig(c) == tt.want {
				ok = true
				if !c.Dynamic && !c.DynamicArgs {
					t.Errorf("Commands(%q): a guess not marked dynamic: %+v", tt.src, c)
				}
			}
		}
		if !ok {
			t.Errorf("Commands(%q) = %q: no %q", tt.src, sigs(got), tt.want)
		}
	}
	// Unknown stays unknown.
	if c := find(t, Commands(`rm -rf $D`), "rm"); c.Args[1] != "$D" {
		t.Errorf("%+v", c)
	}
	if c := find(t, Commands(`for D in a b; do rm -rf $D; done`), "rm"); c.Args[1] != "$D" {
		t.Errorf("a loop variable guessed: %+v", c)
	}
}

func TestCommandsUnparseable(t *testing.T) {
	for _, tt := range []struct {
		src     string
		salvage string // a command still found beside the error
	}{
		{`echo "unclosed`, ""},
		{"rm -rf /; echo 'unclosed", "rm -rf /"},
		{"rm -rf / && (", "rm -rf /"},
		{`bash -c 'echo "unclosed'`, ""},
		{"foo |", "foo"},
		{"if true; then", ""},
	} {
		got := Commands(tt.src)
		unp := false
		for _, c := range got {
			if c.Unparseable {
				unp = true
				if c.Err == "" {
					t.Errorf("Commands(%q): unparseable without an error", tt.src)
				}
			}
		}
		if !unp {
			t.Errorf("Commands(%q) = %q: nothing marked unparseable", tt.src, sigs(got))
		}
		if tt.salvage != "" && !slices.Contains(sigs(got), tt.salvage) {
			t.Errorf("Commands(%q) = %q: %q not salvaged", tt.src, sigs(got), tt.salvage)
		}
	}
}

func find(t *testing.T, cmds []Command, name string) Command {
	t.Helper()
	for _, c := range cmds {
		if c.Name == name {
			return c
		}
	}
	t.Fatalf("no %s among %q", name, sigs(cmds))
	return Command{}
}

func TestCommandsFields(t *testing.T) {
	t.Run("assigns", func(t *testing.T) {
		c := find(t, Commands("A=1 B='x y' env C=3 rm -rf /"), "rm")
		if want := []string{"A=1", "B=x y", "C=3"}; !slices.Equal(c.Assigns, want) {
			t.Errorf("Assigns = %q, want %q", c.Assigns, want)
		}
		if want := []string{"env"}; !slices.Equal(c.Via, want) {
			t.Errorf("Via = %q, want %q", c.Via, want)
		}
	})
	t.Run("feeds", func(t *testing.T) {
		cmds := Commands("curl -s x | sudo bash")
		if c := find(t, cmds, "bash"); !slices.Contains(c.Feeds, "curl") {
			t.Errorf("bash Feeds = %q", c.Feeds)
		}
		if c := find(t, Commands("bash <(wget -O- x)"), "bash"); !slices.Contains(c.Feeds, "wget") {
			t.Errorf("bash Feeds = %q", c.Feeds)
		}
		if c := find(t, Commands("ls | grep x"), "ls"); len(c.Feeds) != 0 {
			t.Errorf("ls Feeds = %q", c.Feeds)
		}
	})
	t.Run("redirs", func(t *testing.T) {
		c := find(t, Commands("{ echo x; } > /dev/sda 2>&1"), "echo")
		if len(c.Redirs) != 2 || c.Redirs[0].Op != ">" || c.Redirs[0].Target != "/dev/sda" {
			t.Errorf("Redirs = %+v", c.Redirs)
		}
	})
	t.Run("via", func(t *testing.T) {
		c := find(t, Commands(`sudo bash -c 'eval "rm -rf /"'`), "rm")
		if want := []string{"sudo", "bash -c", "eval"}; !slices.Equal(c.Via, want) {
			t.Errorf("Via = %q, want %q", c.Via, want)
		}
	})
	t.Run("dynamic args", func(t *testing.T) {
		if c := find(t, Commands(`rm -rf "$DIR"/`), "rm"); !c.DynamicArgs || c.Args[1] != "$DIR/" {
			t.Errorf("%+v", c)
		}
		if c := find(t, Commands(`rm -rf ./build`), "rm"); c.DynamicArgs {
			t.Errorf("%+v", c)
		}
	})
	t.Run("blank", func(t *testing.T) {
		for _, src := range []string{"", "  ", "# just a comment", "\n\n"} {
			if got := Commands(src); len(got) != 0 {
				t.Errorf("Commands(%q) = %q", src, sigs(got))
			}
		}
	})
}

func TestCommandsLimits(t *testing.T) {
	t.Run("too long", func(t *testing.T) {
		p := NewParser(&Options{MaxBytes: 100})
		got := p.Commands(strings.Repeat("a", 101))
		if len(got) != 1 || !got[0].Unparseable {
			t.Fatalf("got %+v", got)
		}
	})
	t.Run("depth", func(t *testing.T) {
		got := Commands(strings.Repeat("eval ", 12) + "rm -rf /")
		if !slices.ContainsFunc(got, func(c Command) bool { return c.Unparseable && strings.Contains(c.Err, "deep") }) {
			t.Errorf("no depth error among %q", sigs(got))
		}
	})
	t.Run("many commands", func(t *testing.T) {
		p := NewParser(&Options{MaxCommands: 10})
		got := p.Commands(strings.Repeat("ls;", 50))
		if len(got) != 11 || !got[10].Unparseable {
			t.Fatalf("got %d commands, last %+v", len(got), got[len(got)-1])
		}
	})
	t.Run("recursion", func(t *testing.T) {
		got := Commands("f(){ f; f; }; f")
		if len(got) > 10 {
			t.Errorf("a recursive function gave %d commands", len(got))
		}
	})
	t.Run("brace bomb", func(t *testing.T) {
		got := Commands("echo " + strings.Repeat("{a,b}", 40))
		if len(got) != 1 || len(got[0].Args) > maxBraceWords {
			t.Errorf("got %d commands, %d args", len(got), len(got[0].Args))
		}
	})
}

func TestEscapes(t *testing.T) {
	for _, tt := range []struct {
		in    string
		style escapeStyle
		want  string
	}{
		{`\x72\x6d`, ansiC, "rm"},
		{`\162\155`, ansiC, "rm"},
		{`\u0072m`, ansiC, "rm"},
		{`a\tb\n`, echoE, "a\tb\n"},
		{`\0162m`, echoE, "rm"},
		{`stop\chere`, echoE, "stop"},
		{`\'`, ansiC, "'"},
		{`\q`, ansiC, `\q`},
	} {
		if got := escapes(tt.in, tt.style); got != tt.want {
			t.Errorf("escapes(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}
