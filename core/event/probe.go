//go:build !sandboxinit

package event

// probeKinds is whether Register probes each payload type with JSON: the
// round trips that check its members against the envelope's, and the
// plan of its fast path. Off only in the sandbox's init program (see
// probe_sandboxinit.go).
const probeKinds = true
