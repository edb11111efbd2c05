package hooks_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	"github.com/harnessd/harnessd/core/event"
	"github.com/harnessd/harnessd/hooks"
)

func Example() {
	dir, _ := os.MkdirTemp("", "hooks")
	defer os.RemoveAll(dir)
	_ = os.WriteFile(filepath.Join(dir, "no-force-push.lua"), []byte(`
harness.on("action.cmd_run", function(ev)
  for _, c in ipairs(harness.commands(ev.command)) do
    if c.name == "git" and c.args[1] == "push" and harness.has_flag(c.args, "-f", "--force") then
      return harness.ask("force push: " .. c.text)
    end
  end
end)
harness.examples{ask = {"git push -f"}, allow = {"git push"}}
`), 0o644)

	e, err := hooks.Load(hooks.Options{Dirs: []hooks.Dir{hooks.Builtin, {Path: dir}}})
	if err != nil {
		fmt.Println(err)
		return
	}
	s := hooks.Session{ID: "s1", Workspace: "/workspace"}
	for _, cmd := range []string{"cd repo && sudo git push --force", "sudo rm -rf /", "git push"} {
		d, _ := e.Action(context.Background(), s, event.CmdRun{Command: cmd})
		fmt.Printf("%s: %s %s\n", cmd, d.Verdict, d.Reason)
	}
	// Output:
	// cd repo && sudo git push --force: ask force push: git push --force
	// sudo rm -rf /: veto recursive delete of the root directory: rm -rf / (via sudo)
	// git push: allow
}

func ExampleRedact() {
	e, _ := hooks.Load(hooks.Options{Dirs: []hooks.Dir{hooks.Builtin}})
	set, _ := e.Observation(context.Background(), hooks.Session{ID: "s1"}, event.CmdRun{Command: "env"}, event.CmdOutput{})
	fmt.Println(hooks.Redact("AWS_ACCESS_KEY_ID=AKIAIOSFODNN7EXAMPLE\nGITHUB_TOKEN=ghp_16C7e42F292c6912E7710c838347Ae178B4a", set.Redactions))
	// Output:
	// AWS_ACCESS_KEY_ID=[REDACTED aws_access_key]
	// GITHUB_TOKEN=[REDACTED github_token]
}
