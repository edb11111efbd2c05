// Package api is harnessd's HTTP/JSON interface on a unix socket, and the
// Go client for it that the CLI uses.
//
// # Basics
//
// Listen creates the socket (mode 0660); NewServer serves one
// daemon.Daemon on it. Every connection's peer credentials (SO_PEERCRED)
// are checked before any request is served. The endpoints:
//
//	POST   /v1/sessions                       create ({"id"?, "labels"?}) -> 201 session
//	GET    /v1/sessions[?state=live]          list
//	GET    /v1/sessions/{id}                  inspect
//	DELETE /v1/sessions/{id}[?purge=true]     end (keep history) or purge
//	POST   /v1/sessions/{id}/actions          an action event -> its observation
//	POST   /v1/sessions/{id}/replies          a model's raw reply ({"text"} or {"tool","arguments"}), parsed
//	                                          -> {"action", "observation"} (invalid_action when malformed)
//	GET    /v1/sessions/{id}/events?after=N&follow=true   NDJSON
//	GET    /v1/outputs/{id}?from_line=&to_line=           a page of a full output
//	GET    /healthz, /metrics
//	GET|POST|DELETE /mcp                      MCP's Streamable HTTP transport, when serve mounts it (HandleMCP)
//
// Errors are {"error": {"code", "message"}} with the status that fits:
// 400 malformed or unknown fields, 403 peer not allowed, 404 no such
// session, output or endpoint, 405 wrong method, 409 session ended or id
// taken, 413 body over daemon.max_body, 429 daemon.max_sessions reached,
// 503 shutting down.
//
// # Caveats
//
// A follower's stream that ends for any reason other than the session's
// end or the client's going away ends with one error line
// ({"error": …}) after the events; the status was already 200.
package api
