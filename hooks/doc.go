// Package hooks runs Lua guardrail policies on a session's events: action
// hooks that veto, ask about or rewrite an action before it is stored and
// run, observation hooks that choose how an output is trimmed and which
// secrets are redacted from it, and session.start/session.end hooks.
//
// # Basics
//
// Load the hook files once; the Engine is safe for concurrent use:
//
//	e, err := hooks.Load(hooks.Options{
//		Dirs: []hooks.Dir{hooks.Builtin, {Path: "/etc/harnessd/hooks"}},
//	})
//	d, err := e.Action(ctx, hooks.Session{ID: id, Workspace: "/workspace"}, event.CmdRun{Command: cmd})
//	switch d.Verdict {
//	case hooks.Veto:    // record a hook_veto observation {Hook: d.Hook, Reason: d.Reason}; run nothing
//	case hooks.Ask:     // wait for a person; if approved run d.Action when non-nil, else the action
//	case hooks.Rewrite: // store and run d.Action (keep the original in the event)
//	case hooks.Allow:   // run the action
//	}
//	set, err := e.Observation(ctx, sess, action, output)   // set.Trim, set.MaxChars, set.Redactions
//	text = hooks.Redact(text, set.Redactions)
//
// A hook file registers handlers and may declare examples, which are
// checked when it loads:
//
//	harness.on("action.cmd_run", function(ev)
//	  for _, c in ipairs(harness.commands(ev.command)) do
//	    if c.name == "rm" and harness.has_flag(c.args, "-r", "-R") and harness.any_arg(c.args, "/") then
//	      return harness.veto("recursive delete of /")
//	    end
//	  end
//	end)
//	harness.examples{veto = {"sudo rm -rf /"}, allow = {"rm -rf ./build"}}
//
// Event patterns are action.KIND (action.cmd_run, action.message, …),
// action.*, observation.KIND (observation.cmd_output), observation.*,
// session.start, session.end and session.*. An action hook gets the
// action's fields (ev.command, ev.is_input, ev.timeout_s, ev.reset for
// cmd_run) and returns harness.veto(reason), harness.ask(reason),
// harness.rewrite({field = value, …}, reason) or nothing. When several
// decide, the strictest wins: veto > ask > rewrite > allow; after a
// rewrite every action hook runs again on the new action, so a rewrite
// cannot slip past a veto (a rewrite must therefore leave an action it
// already rewrote unchanged). An observation hook gets (ev, action) and
// returns nothing or {trim = {head =, tail =, keep = {…}, max_keep =,
// line_cap =}, max_chars =, redact = {{pattern =, label =}, …}}.
//
// The rest of the harness table: harness.commands(cmd) lists every simple
// command cmd runs (see package shcmd) as tables {name, argv0, args,
// assigns, redirs = {{op, target}}, feeds, via, dynamic, dynamic_args,
// unparseable, error, text}; harness.has_flag(args, "-r", …) finds flags,
// also in clusters (-rf) and as --name=value; harness.any_arg(args,
// pattern, …) returns the first arg matching; harness.match(s, pattern,
// …) matches globs (* crosses "/") or, for a pattern starting with "^",
// Lua patterns; harness.patterns{pattern, …} compiles a list once into a
// set that harness.match and harness.any_arg take in place of a pattern
// (make it when the file loads: matching a set is much quicker than
// passing its patterns one by one); harness.log(…) and print(…) write to
// the Logger;
// harness.session is {id, workspace, profile}, read-only.
//
// Test is the `harnessd hooks test` command: it prints what a file or
// directory of hooks decides about a command and makes of an output.
// Builtin is the shipped policies (hooks/policies, embedded).
//
// # Caveats
//
//   - Lua runs with only the base, string, table and math libraries: no os,
//     io, debug, package, coroutine, no load, loadstring, dofile, require,
//     string.dump, getfenv/setfenv, rawset or collectgarbage. Each file has
//     its own globals; harness is read-only.
//   - Hooks must be stateless. Each call runs in some Lua state from a
//     pool, one per goroutine; globals a hook sets are seen only by later
//     calls that happen to get the same state.
//   - The tables harness.commands returns, and an action hook's cmd_run,
//     fill in some fields when first read (what policies seldom read:
//     argv0, assigns, feeds, text …), since building Lua tables is most of
//     a call's cost. pairs, next and rawget see every field, and what a
//     hook assigns stays; but their metatable is protected (getmetatable
//     gives false), and such a table kept for a later call raises an error
//     when a field not yet read is read there.
//   - harness.commands keeps the analyses of each Lua state's last 128 to
//     256 lines (of up to 4 KiB), so a line repeated is not parsed again.
//   - The budget (Options.Budget, 50ms) is wall-clock time per hook call,
//     enforced between Lua instructions (the clock is read every 256 of
//     them, some microseconds apart). A call into Go (a string function,
//     harness.commands) finishes before the budget is checked; those are
//     bounded (string.rep, string.gsub and string.format refuse results of
//     more than 4 MiB or widths of more than two digits) but memory is not
//     limited otherwise. On a badly overloaded machine a hook can overrun:
//     MaxConcurrent keeps calls beyond the core count waiting outside the
//     budget, a call that overran having run very few Lua instructions is
//     deemed starved of CPU and run once more (so an endless loop may take
//     up to twice the budget to stop), and a larger Budget helps.
//   - An action hook that fails (an error, a bad return value, an overrun)
//     gives a Veto naming its file:line, with Decision.Err set, unless its
//     Dir is FailOpen. A failing observation hook makes Observation return
//     an error beside the settings of the others: a caller that must not
//     leak a secret should withhold the output then.
//   - Reload replaces all files or none: a file that fails to load keeps
//     the previous set active, and the error names every failure.
//   - harness.commands reads what a line says, not what a previous line
//     did: a function, alias or variable defined by an earlier action is
//     unknown (definitions are reported where they are made, so defining
//     a dangerous function is caught there). Code computed at run time
//     ($x, eval "$x", bash -c "$x") is reported Dynamic; the shipped policy
//     asks a person about it. Interpreters' own code (python -c, perl -e)
//     is not analysed.
package hooks
