// Package event defines the typed events harnessd records for every action
// and observation, their JSON codec, and the bus that streams them to
// subscribers.
//
// # Basics
//
// An Event is an envelope (schema version, session, seq, time, source,
// cause) around a Payload: one of CmdRun, Message, Finish, Delegate
// (actions) or CmdOutput, InvalidAction, HookVeto, AgentCrashed, NetConnect,
// SandboxStarted, SandboxStopped (observations). Its JSON form is flat, with
// "kind" as the discriminator:
//
//	{"v":1,"session":"s1","seq":3,"time":"2025-01-02T03:04:05Z","source":"agent",
//	 "kind":"cmd_run","command":"ls","timeout_s":30}
//
// Event.AppendJSON and Decode are the codec (MarshalJSON and UnmarshalJSON
// wrap them). Decode is strict and never panics: an unknown kind, an unknown
// or duplicate field, a value of the wrong type or a schema version newer
// than Version is an error that says which.
//
// A Bus sits on a Log (store.Store in the daemon, MemLog in tests). Append
// through the bus commits to the log and then offers the events to the
// session's subscribers; Subscribe(ctx, session, after) streams the stored
// past and then the live tail, with no gaps and no duplicates.
//
// # Caveats
//
// Events are values, but a CmdOutput's Trimmed is a pointer shared by every
// subscriber that receives the event: treat received events as read-only.
//
// The set of kinds is closed. Adding a kind or a field is a schema change:
// bump Version and keep decoding the older versions, so old stores stay
// readable (strict decoding means an older harnessd rejects the new form
// with ErrUnsupportedVersion rather than misreading it).
//
// A subscriber that stops taking events is cut off after
// BusOptions.StallTimeout with ErrLagged; one that is merely slow is served
// from the log for as long as it keeps taking events.
package event
