// Package files holds the file actions an agent edits with besides bash
// (file_view, file_create, file_str_replace, file_insert, file_undo, all
// answered by file_result), the small wire contract through which they
// reach a sandbox (Request, Response, Filer), and the editor that carries
// them out on top of that contract.
//
// # Basics
//
// The editor does the text work (line numbers, matching, diffs, the undo
// history) in the daemon; the sandbox performs only four primitives on
// its own filesystem, as its own user: read, list, write, remove. A
// native sandbox's init serves them over the socket it already has to
// the daemon (core/sandbox, files_linux.go), so every path resolves in
// the sandbox's mount namespace and a symlink to /etc/passwd is the
// sandbox's /etc/passwd. For the driver "none" the same primitives run
// in the daemon, as the daemon's user: unsandboxed, as that driver is.
//
//	ed := files.Editor{Files: filer, Cwd: cwd, History: hist}
//	res := ed.Do(ctx, files.StrReplace{Path: "main.go", Old: "a", New: "b"})
//
// # Caveats
//
//   - Edits replace the file atomically (a temporary file in the same
//     directory, renamed over it): a hard link to the file keeps the old
//     content, and the directory must be writable.
//   - Files over MaxFileBytes are not read or edited; a view says their
//     size and type.
//   - The undo history is the daemon's, per session and per file, and
//     bounded (HistoryDepth, HistoryBytes): it survives a shell rebuild
//     but not a daemon restart.
//   - An edit checks that the file still holds what it read (IfSum) just
//     before it replaces it; a command writing the file in between can
//     still lose its write to the rename.
//   - A sandbox killed in the middle of a write leaves its temporary file
//     (.NAME.harnessd-XXXX) beside the target.
//   - Action hooks see the path as the model wrote it; the resolved path
//     is known only in the sandbox (Result.Path). A guarantee that a path
//     is never edited is a protected path, not a hook.
package files
