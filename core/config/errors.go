package config

import (
	"errors"
	"fmt"
	"strings"
)

// Classes of configuration errors. Every error Parse, Load, Validate and
// ApplyEnv return for bad input matches exactly one of them with errors.Is;
// errors.As finds the *SyntaxError or *KeyError that says where.
var (
	// ErrSyntax is matched by a *SyntaxError: the file is not valid TOML
	// (bad syntax, a key defined twice, an integer that overflows).
	ErrSyntax = errors.New("config: invalid TOML")

	// ErrUnknownKey is matched by a *KeyError for a key that is not a
	// setting: a typo, a setting in the wrong table, a wrong case.
	ErrUnknownKey = errors.New("config: unknown key")

	// ErrType is matched by a *KeyError for a value of the wrong TOML type:
	// a string where an integer belongs, a table where a string belongs.
	ErrType = errors.New("config: wrong type")

	// ErrInvalid is matched by a *KeyError for a value of the right type
	// that is not allowed: out of range, an unparsable duration, an unknown
	// durability.
	ErrInvalid = errors.New("config: invalid value")
)

// A setting whose Go type the decoder cannot fill (a chan, say) would be
// a bug in harnessd rather than in the file: it is a *KeyError matching
// errors.ErrUnsupported, and a test walking Config keeps it from
// happening.

// A SyntaxError reports a file that is not valid TOML.
type SyntaxError struct {
	File string // the name given to Parse, or the path given to Load
	Line int    // 1-based; 0 if the parser did not say
	Msg  string // the TOML parser's message
	Err  error  // the parser's error, usually a toml.ParseError
}

// Error returns "file:line: msg".
func (e *SyntaxError) Error() string { return where(e.File, e.Line, "") + e.Msg }

// Unwrap returns the TOML parser's error; errors.As finds a
// toml.ParseError there, whose ErrorWithPosition shows the offending line.
func (e *SyntaxError) Unwrap() error { return e.Err }

// Is reports whether target is ErrSyntax.
func (e *SyntaxError) Is(target error) bool { return target == ErrSyntax }

// A KeyError reports a problem with one setting: where it is, which key,
// and what is wrong with it.
type KeyError struct {
	File string // the name given to Parse, or the path given to Load; "" if not from a file
	Line int    // 1-based line of the key in File; 0 if unknown
	Env  string // the environment variable the value came from, if it did
	Key  string // the dotted key, e.g. "terminal.soft_timeout"
	Msg  string // what is wrong; for ErrUnknownKey, a suggestion or ""
	Err  error  // ErrUnknownKey, ErrType or ErrInvalid (or errors.ErrUnsupported, a bug)
}

// Error returns "file:line: key: msg" (or "VAR: key: msg" for a value from
// the environment); an unknown key reads "file:line: unknown key K (did you
// mean X?)".
func (e *KeyError) Error() string {
	var b strings.Builder
	b.WriteString(where(e.File, e.Line, e.Env))
	if e.Err == ErrUnknownKey {
		b.WriteString("unknown key ")
		b.WriteString(e.Key)
		if e.Msg != "" {
			b.WriteString(" (" + e.Msg + ")")
		}
		return b.String()
	}
	b.WriteString(e.Key)
	b.WriteString(": ")
	b.WriteString(e.Msg)
	return b.String()
}

// Unwrap returns the error's class: ErrUnknownKey, ErrType or ErrInvalid
// (or errors.ErrUnsupported).
func (e *KeyError) Unwrap() error { return e.Err }

// where is the "file:line: " (or "VAR: ") prefix of an error message.
func where(file string, line int, env string) string {
	switch {
	case env != "":
		return env + ": "
	case file != "" && line > 0:
		return fmt.Sprintf("%s:%d: ", file, line)
	case file != "":
		return file + ": "
	case line > 0:
		return fmt.Sprintf("line %d: ", line)
	}
	return ""
}

// maxReported caps the problems one error lists, so that feeding Parse the
// wrong file gives a readable message rather than a thousand lines.
const maxReported = 10

// join combines key errors in the order given into one error (nil for
// none); errors.As on the result finds the first.
func join(errs []*KeyError) error {
	switch len(errs) {
	case 0:
		return nil
	case 1:
		return errs[0]
	}
	n := min(len(errs), maxReported)
	all := make([]error, 0, n+1)
	for _, e := range errs[:n] {
		all = append(all, e)
	}
	if more := len(errs) - n; more > 0 {
		all = append(all, fmt.Errorf("... and %d more", more))
	}
	return errors.Join(all...)
}
