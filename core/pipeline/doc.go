// Package pipeline is the one path every action takes, whoever sent it:
// the API, a parsed model reply, an agent run, an MCP call.
//
// # Basics
//
// Pipeline.Do runs one action through its stages, in this order:
//
//	validate            an action kind, a valid source, the payload's own Validate
//	pre-action hooks    Hooks.BeforeAction: allow, rewrite, ask (Approver), veto
//	commit the action   Session.Record; nothing has run yet
//	execute             the Executor registered for the action's kind
//	observation hooks   Hooks.AfterObservation: trim, redact
//	commit observation  Session.Record with Cause = the action's seq; followers see it
//
// A veto (or an ask that no one approved) commits the action and a
// hook_veto observation naming the hook and reason, and runs nothing: the
// agent reads why and can correct itself. An action kind with no executor
// is refused with ErrNoExecutor, never recorded as if it had been done.
// New kinds of action (file edits, python cells, delegation) register an
// executor with Handle.
//
// # Caveats
//
// The pipeline does not take turns: the caller runs one action at a time
// per session (core/daemon holds a per-session turn), and an Approver waits
// inside that turn, so reads of the session must never need it.
package pipeline
