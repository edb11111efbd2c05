// Package hooksbench is the workload the hook benchmarks time: typical
// agent commands and the single hook of the "1 hook" figures. It is shared
// by hooks' `go test -bench` benchmarks and the comparative bench command,
// so both time the same thing.
package hooksbench

import "strconv"

// Commands are typical agent commands.
var Commands = []string{
	"ls -la", "cat README.md", "go test ./...", "git status && git diff --stat", "grep -rn 'TODO' --include='*.go' .",
	"cd /workspace/app && npm test", "python3 -m pytest -x tests/test_api.py", "rm -rf ./build && make -j2",
	"find . -name '*.pyc' -delete", "sed -i 's/foo/bar/g' main.go", "curl -fsSL https://example.com/data.json | jq .",
	"docker ps --format '{{.Names}}'", "export PATH=$PATH:/usr/local/go/bin && go version", "echo hello > out.txt",
	"timeout 60 cargo build --release", "tar czf backup.tgz src && ls -lh backup.tgz", "head -n 50 server.log",
	"pip install -r requirements.txt", "git log --oneline -n 20", "mkdir -p out && cp -r assets out/",
}

// NewCommands returns n commands, each of them new: Commands with a
// numbered comment, far more than a Lua state caches analyses of, so that
// each call parses its command as it would one never seen.
func NewCommands(n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = Commands[i%len(Commands)] + " # " + strconv.Itoa(i)
	}
	return out
}

// OneHook is the single hook of the "1 hook" figures: the example of
// hooks' package doc, a veto of rm -r of /.
const OneHook = `
harness.on("action.cmd_run", function(ev)
  for _, c in ipairs(harness.commands(ev.command)) do
    if c.name == "rm" and harness.has_flag(c.args, "-r", "-R") and harness.any_arg(c.args, "/") then
      return harness.veto("recursive delete of / is not allowed")
    end
  end
end)`
