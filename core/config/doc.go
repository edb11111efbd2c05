// Package config reads harness.toml: harnessd's settings, their defaults
// and the rules they must follow, with errors that say which line is wrong.
//
// # Basics
//
// Default returns the built-in settings, which the harness.toml at the
// root of the repository documents one by one. Load reads a file over
// them and Parse does the same for bytes: a key the file leaves out keeps
// its default. ApplyEnv then lets a few environment variables override
// the result (flags are the CLI's business):
//
//	cfg, err := config.Load("/etc/harnessd/harness.toml")
//	if err != nil {
//		return err // e.g. harness.toml:12: unknown key terminal.sof_timeout (did you mean soft_timeout?)
//	}
//	if err := cfg.ApplyEnv(os.Getenv); err != nil {
//		return err // e.g. HARNESSD_DURABILITY: store.durability: must be "strict" or "batch", got "fast"
//	}
//
// Parsing is strict. A key that is not a setting (a typo, a wrong case, a
// setting in the wrong table), a value of the wrong type and a value out
// of range are all errors, each naming the key and its line; a misspelt
// key comes with a suggestion. Errors are *SyntaxError or *KeyError, and
// match ErrSyntax, ErrUnknownKey, ErrType or ErrInvalid with errors.Is.
// When a file has several problems, the error lists them all, one per
// line, in file order (errors.As finds the first).
//
// Durations are TOML strings in Go's syntax ("10s", "1m30s"): see
// Duration. Settings may also be booleans, integers and floats of any
// size (a value that does not fit is an error, never cut short),
// strings, arrays of these, and tables: a fixed one, one of any keys
// such as terminal.env, or an array of tables ([[x]]), to any depth; an
// error inside an array of tables names the element ("x[1].name") and
// its line.
//
// # Caveats
//
// Each layer must leave a valid configuration on its own: Parse validates
// the file over the defaults, and ApplyEnv validates what it changed
// against the rest. A file with soft_timeout above its hard_timeout is
// refused even if the environment would have lowered it.
//
// Validate, called on a Config changed in code, names keys but not lines,
// since a Config does not remember where its values came from; that keeps
// a Config plain data, equal (reflect.DeepEqual) to any other with the same
// settings.
//
// Validation checks values, not the machine: whether terminal.shell is on
// PATH or store.path is writable is found out when they are used.
package config
