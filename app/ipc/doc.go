// Package ipc is the local control channel between the `maven` CLI and the running daemon: a
// Unix socket (DATA/maven.sock, mode 0600) speaking JSON-RPC 2.0, one JSON object per line.
//
// The package knows no methods; the daemon registers them as HandlerFuncs, so whether a method
// exists is decided in one place (and there is deliberately none that enables or calls a tool).
//
// Protocol choices, where JSON-RPC 2.0 leaves room:
//   - A connection carries any number of requests, one per line, answered in order.
//   - Blank lines are ignored; a line that is not valid JSON gets a ParseError with id null and
//     the connection keeps serving.
//   - A line longer than MaxLineBytes gets a ParseError with id null and the connection is
//     closed: skipping to the next newline would mean reading unbounded input from a client that
//     is already misbehaving.
//   - Batches (JSON arrays) are refused with InvalidRequest: the CLI sends one request per call,
//     and refusing them keeps one line = at most one reply.
//   - Notifications (no "id") are run but never answered, not even with an error.
//   - "params", when present and not null, must be an object or an array.
//   - A handler error that is (or wraps) an *Error is sent as is. Any other error is logged and
//     the client gets InternalError with a generic message: the socket is owner-only, but the
//     CLI prints what it receives, and a handler that wants the owner to read a message says so
//     by returning an *Error.
//   - A connection idle for IdleTimeout (a whole line must arrive within it) is closed.
package ipc
