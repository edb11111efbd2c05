// Package agent is the controller loop that drives an agent through a
// task in a session: a run.
//
// # Basics
//
// A run goes step by step. Each step hands the agent (a plugin process
// started through a Launcher) a StepRequest with the task, the repository
// guidance and every event of the session since its last step, exactly as
// the store holds them; takes its answer (an action, a reply to parse, or
// only a thought); and carries the action out through the same action
// pipeline the API uses (Sessions.Act, Sessions.Reply), in the session's
// turn. The run ends on finish, max_steps, its wall-clock budget, its
// token or cost budget, a user's stop, the session ending, the daemon
// shutting down, or the agent failing.
//
// Everything a run does is recorded in the session's event stream:
// run_started {agent, task, limits}, guidance_loaded, an agent_step
// (tokens, cost, thought) before each step's action, context_masked when
// the agent masked old observations, agent_crashed for each failure of the
// plugin, and run_ended {reason, steps, tokens, cost}. The payloads are
// in kinds.go.
//
// A plugin that crashes, hangs past its step timeout, fails its handshake
// or answers with garbage is recorded as agent_crashed and restarted, with
// backoff, up to Limits.MaxRestarts times; then the run ends with reason
// agent_failed. The session stays usable.
//
// A message from the agent is recorded; in an unattended run (the
// default) the controller answers it with a fixed nudge to go on or
// finish, recorded as a user message and counted as a step. In an
// attended run it ends the run with reason awaiting_user.
//
// delegate {agent, task} runs another configured agent as a sub-run in the
// same session, inside the delegate action's turn; its run_started and
// run_ended name the parent run, and its finish message answers the
// delegate action as a delegate_result observation.
//
// # Caveats
//
// A run's record (Options.Runs) is written at its start, after each
// step and at its end; a run a killed daemon was driving is ended by the
// next one (Interrupted, reason daemon_stopped) with the usage of its last
// record: tokens an agent reported after its last step are not counted.
// The event envelope has no run field, so
// actions and observations belong to the run whose run_started and
// run_ended enclose them; agent_step names the run before each action.
package agent
