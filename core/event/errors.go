package event

import "errors"

// Errors of the codec. Decode wraps them with what was wrong and where, so
// errors.Is finds the class and the message names the culprit.
var (
	// ErrMalformed is returned for input that is not one JSON object of
	// the event schema: bad syntax, trailing data, a field of the wrong
	// type, a duplicate field, a missing kind.
	ErrMalformed = errors.New("event: malformed")

	// ErrUnknownKind is returned for a kind this build does not know.
	ErrUnknownKind = errors.New("event: unknown kind")

	// ErrUnknownField is returned for a field that neither the envelope nor
	// the event's kind has.
	ErrUnknownField = errors.New("event: unknown field")

	// ErrUnsupportedVersion is returned for an event written with a schema
	// newer than Version: a newer harnessd wrote it.
	ErrUnsupportedVersion = errors.New("event: unsupported schema version")

	// ErrInvalid is returned when encoding an event that cannot be written:
	// no payload, an unknown source, a time outside years 0-9999, a
	// non-finite number.
	ErrInvalid = errors.New("event: invalid")
)

// Errors of the bus.
var (
	// ErrClosed is returned by a Bus that was closed, and ends its
	// subscriptions.
	ErrClosed = errors.New("event: bus closed")

	// ErrLagged ends a subscription whose consumer took no event for the
	// bus's StallTimeout while events were waiting. Every event before it
	// was delivered; resubscribe after the last seq received to go on.
	ErrLagged = errors.New("event: subscriber lagged")

	// ErrGap is returned when a Log's Read yields a seq other than the one
	// expected next: the log broke its contract.
	ErrGap = errors.New("event: gap in log")
)
