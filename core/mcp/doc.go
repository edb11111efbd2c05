// Package mcp serves harnessd to Model Context Protocol clients (Claude
// Code, Codex CLI, Cursor, Zed, Goose …): a sandboxed, persistent shell
// per session as MCP tools, over any transport of the MCP Go SDK
// (github.com/modelcontextprotocol/go-sdk).
//
// # Basics
//
// A Server is a client of harnessd's API (an *api.Client): over the
// daemon's socket for `harnessd mcp` on stdio, or in process, as the
// HTTP peer, for the daemon's own /mcp endpoint (NewHTTPHandler). Every
// tool call is one or two API calls, so an MCP client gets exactly what
// the API gives: the same pipeline, hooks, audit log, trimmed output and
// "still running" semantics.
//
// The tools, each with a typed input (its JSON schema inferred, bounds
// added) and a typed structured result:
//
//	session_create  {workspace?, id?, labels?, network?, profile?} -> the session
//	session_list    {}                                  -> every session
//	session_delete  {session, purge?}                   -> the ended session
//	exec            {session?, command, is_input?, timeout_s?}
//	                -> exit_code (-1: still running), cwd, the trimmed output, output_id and how to page it
//	output_read     {output_id, from_line?, to_line?}   -> a page of a full output
//	events          {session?, after?, limit?}          -> the session's events, one JSON line each
//	file_view       {session?, path, from_line?, to_line?}   -> the file with line numbers
//	file_create     {session?, path, content, overwrite?}    -> what was written
//	file_str_replace {session?, path, old, new}              -> the edited region and the diff
//	file_insert     {session?, path, line, text}             -> the edited region and the diff
//	file_undo       {session?, path}                         -> the file as it was before
//	python_run      {session?, code, is_input?, timeout_s?, reset?}
//	                -> what the cell printed, its exception if any (-1: still running)
//
// The file tools are the file actions (core/files): done by the sandbox's
// init inside the sandbox, vetoed by the same hooks, recorded in the same
// log; a failed edit (old matching twice, say) is an isError result that
// says where it matched.
//
// exec with no session uses the connection's default session, created on
// first use and ended (not purged: its history stays) when the client
// disconnects, unless Options.Keep.
//
// A failure the model can do something about (no such session, a hook's
// veto, a bad line range, the daemon not running) is a tool result with
// isError and a sentence saying what to do; only a broken protocol is a
// protocol error. While exec waits, a client that asked for progress gets
// a notification a second; a cancelled exec sends C-c to the command
// (SIGINT to its process group, as the hard timeout does), recorded in
// the session's log like any input.
//
// # Caveats
//
// python_run is the session's persistent Python (core/python): a
// cancelled call interrupts its cell, as a cancelled exec does. session_create's
// profile is one of the daemon's harness.toml [profiles] (the operator
// writes them; a client only chooses), and its network may only narrow
// the profile's or sandbox.network.
package mcp
