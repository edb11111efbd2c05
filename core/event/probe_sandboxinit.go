//go:build sandboxinit

package event

// probeKinds is off in the sandbox's init program (package
// core/sandbox/cmd/sandbox-init, built with the sandboxinit tag). It links
// this package only through core/files' protocol types and codes no event,
// yet Register's JSON probes of every kind were a tenth of its CPU time,
// some 1 ms of each sandbox's start. The kinds are the same ones harnessd,
// built without the tag, probes at its own start; an event coded here
// anyway would take the general path, correct, only slower.
const probeKinds = false
