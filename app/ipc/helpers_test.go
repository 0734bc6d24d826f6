package ipc

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// testTimeout bounds every wait so a bug fails the test instead of hanging it.
const testTimeout = 10 * time.Second

// testCtx bounds a call so that a server that never answers fails the test instead of hanging it.
func testCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(t.Context(), testTimeout)
	t.Cleanup(cancel)
	return ctx
}

// syncBuffer collects log output written from server goroutines.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.String()
}

// shortDir returns a directory whose paths fit in sun_path with room for the temporary name.
func shortDir(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	if len(dir)+len("/run/maven.sock")+8 <= maxSocketPath {
		return dir
	}
	dir, err := os.MkdirTemp("", "ipc")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(dir) })
	return dir
}

// socketPath returns a socket path whose directory does not exist yet.
func socketPath(t *testing.T) string {
	t.Helper()
	return filepath.Join(shortDir(t), "run", "maven.sock")
}

func newTestLogger(t *testing.T) (*slog.Logger, *syncBuffer) {
	buf := &syncBuffer{}
	h := slog.NewTextHandler(io.MultiWriter(t.Output(), buf), &slog.HandlerOptions{Level: slog.LevelDebug})
	return slog.New(h), buf
}

// testHandlers are the methods most tests serve.
func testHandlers() map[string]HandlerFunc {
	var count atomic.Int64
	return map[string]HandlerFunc{
		"echo": func(_ context.Context, params json.RawMessage) (any, error) {
			return params, nil
		},
		"params": func(_ context.Context, params json.RawMessage) (any, error) {
			return map[string]any{"nil": params == nil, "raw": string(params)}, nil
		},
		"sum": func(_ context.Context, params json.RawMessage) (any, error) {
			var p struct{ A, B int }
			if err := DecodeParams(params, &p); err != nil {
				return nil, err
			}
			return map[string]int{"sum": p.A + p.B}, nil
		},
		"count": func(context.Context, json.RawMessage) (any, error) {
			return count.Add(1), nil
		},
		"rpcerr": func(context.Context, json.RawMessage) (any, error) {
			return nil, fmt.Errorf("looking up: %w", &Error{Code: 4001, Message: "no such tool", Data: map[string]any{"name": "x"}})
		},
		"fail": func(context.Context, json.RawMessage) (any, error) {
			return nil, errors.New("database exploded at /secret/path")
		},
		"panic": func(context.Context, json.RawMessage) (any, error) {
			panic("boom")
		},
		"badresult": func(context.Context, json.RawMessage) (any, error) {
			return func() {}, nil
		},
		"baddata": func(context.Context, json.RawMessage) (any, error) {
			return nil, &Error{Code: 4002, Message: "with bad data", Data: make(chan int)}
		},
	}
}

type testServer struct {
	*Server
	path string
	logs *syncBuffer
	done chan error // Serve's result
}

// start listens on path and serves in the background; cleanup closes the server and checks that
// Serve returned.
func start(t *testing.T, path string, handlers map[string]HandlerFunc, configure ...func(*Server)) *testServer {
	t.Helper()
	logger, logs := newTestLogger(t)
	s := NewServer(logger, handlers)
	for _, f := range configure {
		f(s)
	}
	if err := s.Listen(path); err != nil {
		t.Fatalf("Listen: %v", err)
	}
	ts := &testServer{Server: s, path: path, logs: logs, done: make(chan error, 1)}
	go func() { ts.done <- s.Serve(context.Background()) }()
	t.Cleanup(func() {
		if err := s.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
		waitErr(t, ts.done, "Serve")
	})
	return ts
}

// waitErr waits for one error from ch and fails on a non-nil error or a timeout.
func waitErr(t *testing.T, ch <-chan error, what string) {
	t.Helper()
	select {
	case err := <-ch:
		if err != nil {
			t.Errorf("%s returned %v", what, err)
		}
	case <-time.After(testTimeout):
		t.Fatalf("%s did not return within %v", what, testTimeout)
	}
}

// lineConn is a raw client connection for speaking the wire protocol by hand.
type lineConn struct {
	t    *testing.T
	conn net.Conn
	r    *bufio.Reader
}

func dial(t *testing.T, path string) *lineConn {
	t.Helper()
	conn, err := net.Dial("unix", path)
	if err != nil {
		t.Fatalf("dial: %v", err)
	}
	t.Cleanup(func() { _ = conn.Close() })
	if err := conn.SetDeadline(time.Now().Add(testTimeout)); err != nil {
		t.Fatal(err)
	}
	return &lineConn{t: t, conn: conn, r: bufio.NewReaderSize(conn, 1<<16)}
}

func (c *lineConn) send(lines ...string) {
	c.t.Helper()
	if _, err := io.WriteString(c.conn, strings.Join(lines, "\n")+"\n"); err != nil {
		c.t.Fatalf("send: %v", err)
	}
}

// recv reads one reply and checks it is a well-formed JSON-RPC 2.0 response.
func (c *lineConn) recv() response {
	c.t.Helper()
	line, err := c.r.ReadBytes('\n')
	if err != nil {
		c.t.Fatalf("recv: %v", err)
	}
	var resp response
	if err := json.Unmarshal(line, &resp); err != nil {
		c.t.Fatalf("reply %q is not JSON: %v", line, err)
	}
	if resp.JSONRPC != "2.0" || (resp.Result == nil) == (resp.Error == nil) || resp.ID == nil {
		c.t.Fatalf("reply %q is not a JSON-RPC 2.0 response", line)
	}
	return resp
}
