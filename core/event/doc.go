// Package event defines the typed events harnessd records for every action
// and observation, the registry of their kinds, their JSON codec, and the
// bus that streams them to subscribers.
//
// # Basics
//
// An Event is an envelope (schema version, session, seq, time, source,
// cause) around a Payload, a value of the struct type registered for its
// kind. Each kind is an action (CmdRun, Message, Finish, Delegate are built
// in) or an observation (CmdOutput, InvalidAction, HookVeto, AgentCrashed,
// NetConnect, SandboxStarted, SandboxStopped). Its JSON form is flat, with
// "kind" as the discriminator:
//
//	{"v":1,"session":"s1","seq":3,"time":"2025-01-02T03:04:05Z","source":"agent",
//	 "kind":"cmd_run","command":"ls","timeout_s":30}
//
// Event.AppendJSON and Decode are the codec (MarshalJSON and UnmarshalJSON
// wrap them). Decode is strict and never panics: an unknown kind, an unknown,
// duplicate or wrongly-cased field, a value of the wrong type or a schema
// version newer than Version is an error that says which.
//
// A Bus sits on a Log (store.Store in the daemon, MemLog in tests). Append
// through the bus commits to the log and then offers the events to the
// session's subscribers; Subscribe(ctx, session, after) streams the stored
// past and then the live tail, with no gaps and no duplicates. ReadRaw
// streams the stored JSON itself, for replays that only forward events.
//
// # Adding a kind
//
// The set of kinds is open. A package that needs one (a plugin, a hook, a
// new action) declares the payload type, with the JSON names of its fields
// in struct tags, gives it a Kind method, and registers it once, in its
// init:
//
//	type FileEdit struct {
//		Path string `json:"path"`
//		Diff string `json:"diff,omitempty"`
//	}
//
//	func (FileEdit) Kind() event.Kind { return "file_edit" }
//
//	func init() { event.Register[FileEdit]("file_edit", event.Action) }
//
// From then on Decode reads "file_edit" events into FileEdit values and
// AppendJSON writes them; Kinds lists it and Kind.IsAction says what it is.
// The codec is github.com/go-json-experiment/json (encoding/json/v2), so
// the tags mean what they mean there; the field names must not be the
// envelope's. Register panics on a kind registered twice or a type it
// cannot take: that is found at init.
//
// # Caveats
//
// Events are values, but a CmdOutput's Trimmed is a pointer shared by every
// subscriber that receives the event: treat received events as read-only.
//
// Strict decoding means that a store holding a kind this build has not
// registered (a plugin's, say) does not read as a partial history: Read
// fails with ErrUnknownKind at that event, while ReadRaw still streams it.
// Changing the envelope or a built-in kind is a schema change: bump Version
// and keep decoding the older versions, so old stores stay readable (an
// older harnessd rejects the new form with ErrUnsupportedVersion rather than
// misreading it). A registered kind changes by becoming a new kind.
//
// A subscriber that stops taking events is cut off after
// BusOptions.StallTimeout with ErrLagged; one that is merely slow is served
// from the log for as long as it keeps taking events.
package event
