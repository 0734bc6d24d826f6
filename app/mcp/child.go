package mcp

// What a stdio server's process leaves behind when it dies: its exit status and the last lines
// it wrote on stderr. A server that cannot start says why there ("BRAVE_API_KEY is required"),
// and the sdk only ever sees the end of its output ("client is closing: EOF").

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os/exec"
	"slices"
	"strings"
	"sync"
	"syscall"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"maven/app/reveal"
)

// Bounds on what is kept of a stdio server's stderr: the last lines, each cut.
const (
	maxStderrLine  = 1024 // bytes of one line buffered before its newline; the rest is dropped
	keptStderr     = 5    // lines kept for the owner
	keptStderrLine = 200  // bytes kept of each
)

// ExitError is a stdio server whose process ended by itself, before Maven closed it: how it
// ended and the last lines it wrote on stderr, secret values masked.
type ExitError struct {
	Status string   // "exited with status 1", or how a signal ended it
	Stderr []string // its last lines on stderr, oldest first; at most keptStderr
}

// Error is the status and the last line on stderr, the likeliest to say why.
func (e *ExitError) Error() string {
	if len(e.Stderr) == 0 {
		return e.Status + " (nothing on stderr)"
	}
	return e.Status + ": " + e.Stderr[len(e.Stderr)-1]
}

// stdioChild is one start of a stdio server's process: its stderr, and how its connection
// ended. The transport's connection reports to it; the supervisor reads it after the session.
type stdioChild struct {
	stderr *stderrTail

	mu          sync.Mutex
	closing     bool  // Maven began to close the connection
	outputEnded bool  // the server's output, or the pipe to it, ended before that
	exited      bool  // the process was waited for
	waitErr     error // what waiting returned: nil for status 0
}

// serverEnded records that the server's side of the connection ended (its output, or the pipe
// to it), unless Maven was closing it already.
func (c *stdioChild) serverEnded() {
	c.mu.Lock()
	c.outputEnded = c.outputEnded || !c.closing
	c.mu.Unlock()
}

// exit returns how the process ended by itself, or nil while it runs or when Maven ended it.
func (c *stdioChild) exit() *ExitError {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.outputEnded || !c.exited {
		return nil
	}
	var status string
	var ee *exec.ExitError
	switch {
	case c.waitErr == nil:
		status = "exited with status 0"
	case errors.As(c.waitErr, &ee) && ee.ExitCode() >= 0:
		status = fmt.Sprintf("exited with status %d", ee.ExitCode())
	case errors.As(c.waitErr, &ee):
		status = "ended by " + ee.String() // "signal: killed"
	default:
		return nil // it never exited: closing it failed
	}
	return &ExitError{Status: status, Stderr: c.stderr.lines()}
}

// childTransport is a stdio server's transport, reporting to child how its connection ends.
type childTransport struct {
	sdk.Transport
	child *stdioChild
}

func (t *childTransport) Connect(ctx context.Context) (sdk.Connection, error) {
	conn, err := t.Transport.Connect(ctx)
	if err != nil {
		return nil, err
	}
	return &childConn{Connection: conn, child: t.child}, nil
}

// childConn tells its child whether the server's output ended before Maven closed the
// connection (the process died) and, once closed, what waiting for the process returned: the
// sdk's connection closes by closing stdin and waiting, and returns the wait's error.
type childConn struct {
	sdk.Connection
	child *stdioChild
}

func (c *childConn) Read(ctx context.Context) (jsonrpc.Message, error) {
	msg, err := c.Connection.Read(ctx)
	if errors.Is(err, io.EOF) {
		c.child.serverEnded()
	}
	return msg, err
}

// Write notes a broken pipe: the process is gone (a pipe Maven closed says so otherwise).
func (c *childConn) Write(ctx context.Context, msg jsonrpc.Message) error {
	err := c.Connection.Write(ctx, msg)
	if errors.Is(err, syscall.EPIPE) {
		c.child.serverEnded()
	}
	return err
}

func (c *childConn) Close() error {
	c.child.mu.Lock()
	c.child.closing = true
	c.child.mu.Unlock()
	err := c.Connection.Close()
	var ee *exec.ExitError
	if err == nil || errors.As(err, &ee) {
		// The process was waited for, and its stderr copied to the end.
		c.child.stderr.flush()
		c.child.mu.Lock()
		c.child.exited, c.child.waitErr = true, err
		c.child.mu.Unlock()
	}
	return err
}

// stderrTail is a stdio server's stderr: each line goes to the debug log, and the last
// keptStderr lines are kept, each cut to keptStderrLine bytes, with mask applied (the secret
// values the server was given). A line longer than maxStderrLine is cut before its newline.
type stderrTail struct {
	logger *slog.Logger
	mask   func(string) string

	mu   sync.Mutex
	buf  []byte   // the line being written
	kept []string // masked, oldest first
}

func newStderrTail(logger *slog.Logger, mask func(string) string) *stderrTail {
	return &stderrTail{logger: logger, mask: mask}
}

func (w *stderrTail) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	n := len(p)
	for len(p) > 0 {
		i := bytes.IndexByte(p, '\n')
		if i < 0 {
			if room := maxStderrLine - len(w.buf); room > 0 {
				w.buf = append(w.buf, p[:min(room, len(p))]...)
			}
			break
		}
		if room := maxStderrLine - len(w.buf); room > 0 {
			w.buf = append(w.buf, p[:min(room, i)]...)
		}
		w.endLine()
		p = p[i+1:]
	}
	return n, nil
}

// flush ends a last line written without a newline.
func (w *stderrTail) flush() {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.endLine()
}

// endLine keeps the buffered line, masked, and empties the buffer; w.mu is held. The raw bytes
// are cleared: the server may have echoed a secret.
func (w *stderrTail) endLine() {
	line := strings.TrimSpace(w.mask(string(w.buf)))
	clear(w.buf)
	w.buf = w.buf[:0]
	if line == "" {
		return
	}
	w.logger.Debug("mcp server stderr", "line", line)
	line, _ = reveal.Cut(line, keptStderrLine, "…")
	if len(w.kept) == keptStderr {
		w.kept = slices.Delete(w.kept, 0, 1)
	}
	w.kept = append(w.kept, line)
}

// lines returns the kept lines, oldest first.
func (w *stderrTail) lines() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return slices.Clone(w.kept)
}
