// Package proto is the generated Go code of agent.proto, the gRPC
// contract between harnessd and its agent plugins. Regenerate it with
// gen.sh (go generate); package plugins wraps it for Go hosts and
// plugins.
package proto

//go:generate ./gen.sh
