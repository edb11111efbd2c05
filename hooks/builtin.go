package hooks

import "embed"

//go:embed policies/*.lua
var policyFiles embed.FS

// Builtin is the policies that ship with harnessd (hooks/policies/*.lua,
// embedded in the binary): dangerous.lua vetoes commands that destroy the
// machine or leak credentials, secrets.lua redacts secrets from outputs,
// trimming.lua keeps the failure lines of test runners and compilers.
// Their files are named "builtin/NAME.lua" in decisions. Put Builtin first
// in Options.Dirs to have them on.
var Builtin = Dir{Path: "policies", FS: policyFiles, Name: "builtin"}
