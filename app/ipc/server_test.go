package ipc

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"io/fs"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

func TestListenPermissions(t *testing.T) {
	// With no umask at all, only the explicit chmods can produce the right modes.
	old := syscall.Umask(0)
	t.Cleanup(func() { syscall.Umask(old) })
	path := socketPath(t)
	start(t, path, nil)

	fi, err := os.Lstat(path)
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode().Type() != fs.ModeSocket {
		t.Errorf("%s has type %v, want a socket", path, fi.Mode().Type())
	}
	if got := fi.Mode().Perm(); got != 0o600 {
		t.Errorf("socket mode = %v, want -rw-------", got)
	}
	dir := filepath.Dir(path)
	di, err := os.Stat(dir)
	if err != nil {
		t.Fatal(err)
	}
	if got := di.Mode().Perm(); got != 0o700 {
		t.Errorf("created directory mode = %v, want drwx------", got)
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	if diff := cmp.Diff([]string{"maven.sock"}, names); diff != "" {
		t.Errorf("directory entries (-want +got), the temporary name must be gone:\n%s", diff)
	}
}

func TestListenLeavesExistingDirectoryAlone(t *testing.T) {
	dir := shortDir(t)
	if err := os.Chmod(dir, 0o750); err != nil {
		t.Fatal(err)
	}
	ts := start(t, filepath.Join(dir, "maven.sock"), nil)

	di, err := os.Stat(dir)
	if err != nil {
		t.Fatal(err)
	}
	if got := di.Mode().Perm(); got != 0o750 {
		t.Errorf("existing directory mode changed to %v", got)
	}
	if !strings.Contains(ts.logs.String(), "accessible to group or others") {
		t.Errorf("no warning about the group-accessible directory; logs:\n%s", ts.logs)
	}
}

func TestListenRefusesWhileDaemonAnswers(t *testing.T) {
	ts := start(t, socketPath(t), testHandlers())

	second := NewServer(nil, nil)
	err := second.Listen(ts.path)
	if !errors.Is(err, ErrAlreadyRunning) {
		t.Fatalf("second Listen = %v, want ErrAlreadyRunning", err)
	}
	if err := second.Close(); err != nil {
		t.Fatalf("closing the refused server: %v", err)
	}
	// The first daemon keeps its socket and keeps answering.
	var got int
	if err := Call(testCtx(t), ts.path, "count", nil, &got); err != nil {
		t.Fatalf("first server after refused start: %v", err)
	}
	if got != 1 {
		t.Errorf("count = %d, want 1", got)
	}
}

func TestListenReplacesStaleSocket(t *testing.T) {
	path := socketPath(t)
	if err := os.Mkdir(filepath.Dir(path), 0o700); err != nil {
		t.Fatal(err)
	}
	// A listener closed without unlinking leaves what a crashed daemon leaves.
	ln, err := net.ListenUnix("unix", &net.UnixAddr{Name: path, Net: "unix"})
	if err != nil {
		t.Fatal(err)
	}
	ln.SetUnlinkOnClose(false)
	if err := ln.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Lstat(path); err != nil {
		t.Fatalf("stale socket not left behind: %v", err)
	}

	ts := start(t, path, testHandlers())
	if err := Call(testCtx(t), path, "echo", nil, nil); err != nil {
		t.Fatalf("Call after replacing stale socket: %v", err)
	}
	if !strings.Contains(ts.logs.String(), "removed stale socket") {
		t.Errorf("stale socket removal not logged; logs:\n%s", ts.logs)
	}
}

func TestListenRefusesToReplace(t *testing.T) {
	tests := []struct {
		name string
		path func(t *testing.T) string
	}{
		{"regular file at the socket path", func(t *testing.T) string {
			path := filepath.Join(shortDir(t), "maven.sock")
			if err := os.WriteFile(path, []byte("keep me"), 0o600); err != nil {
				t.Fatal(err)
			}
			return path
		}},
		{"socket directory is a file", func(t *testing.T) string {
			dir := filepath.Join(shortDir(t), "data")
			if err := os.WriteFile(dir, []byte("keep me"), 0o600); err != nil {
				t.Fatal(err)
			}
			return filepath.Join(dir, "maven.sock")
		}},
		{"path too long for sun_path", func(t *testing.T) string {
			return filepath.Join(shortDir(t), strings.Repeat("d", 120), "maven.sock")
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := tt.path(t)
			s := NewServer(nil, nil)
			if err := s.Listen(path); err == nil {
				t.Fatal("Listen succeeded, want an error")
			} else {
				t.Logf("Listen: %v", err)
			}
			if err := s.Close(); err != nil {
				t.Fatal(err)
			}
			for _, p := range []string{path, filepath.Dir(path)} {
				if b, err := os.ReadFile(p); err == nil && string(b) != "keep me" {
					t.Errorf("%s was modified", p)
				}
			}
		})
	}
}

func TestCloseRemovesSocketAndEndsServe(t *testing.T) {
	path := socketPath(t)
	s := NewServer(nil, testHandlers())
	if err := s.Listen(path); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- s.Serve(context.Background()) }()
	if err := Call(testCtx(t), path, "echo", nil, nil); err != nil {
		t.Fatal(err)
	}

	if err := s.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	waitErr(t, done, "Serve")
	if _, err := os.Lstat(path); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("socket still present after Close: %v", err)
	}
	if err := Call(testCtx(t), path, "echo", nil, nil); !errors.Is(err, ErrNotRunning) {
		t.Errorf("Call after Close = %v, want ErrNotRunning", err)
	}
	if err := s.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
	if err := s.Listen(path); !errors.Is(err, ErrServerClosed) {
		t.Errorf("Listen after Close = %v, want ErrServerClosed", err)
	}
	if err := s.Serve(context.Background()); err != nil {
		t.Errorf("Serve after Close = %v, want nil", err)
	}
}

func TestServeStopsWhenContextEnds(t *testing.T) {
	path := socketPath(t)
	s := NewServer(nil, nil)
	if err := s.Listen(path); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(testCtx(t))
	done := make(chan error, 1)
	go func() { done <- s.Serve(ctx) }()
	cancel()
	waitErr(t, done, "Serve")
	// Serve returns only after Close has finished, so the socket is already gone.
	if _, err := os.Lstat(path); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("socket still present after Serve returned: %v", err)
	}
}

func TestServeBeforeListen(t *testing.T) {
	if err := NewServer(nil, nil).Serve(context.Background()); err == nil {
		t.Error("Serve before Listen succeeded, want an error")
	}
}

func TestCloseCancelsAndWaitsForHandlers(t *testing.T) {
	started := make(chan struct{})
	var returned atomic.Bool
	ts := start(t, socketPath(t), map[string]HandlerFunc{
		"block": func(ctx context.Context, _ json.RawMessage) (any, error) {
			close(started)
			<-ctx.Done()
			returned.Store(true)
			return nil, ctx.Err()
		},
	})
	callErr := make(chan error, 1)
	go func() { callErr <- Call(testCtx(t), ts.path, "block", nil, nil) }()
	select {
	case <-started:
	case <-time.After(testTimeout):
		t.Fatal("handler never started")
	}

	if err := ts.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	if !returned.Load() {
		t.Error("Close returned before the handler did")
	}
	select {
	case err := <-callErr:
		if err == nil {
			t.Error("Call to a handler cancelled by Close succeeded")
		}
	case <-time.After(testTimeout):
		t.Fatal("Call did not return after Close")
	}
}

func TestMalformedLineThenValidRequest(t *testing.T) {
	ts := start(t, socketPath(t), testHandlers())
	c := dial(t, ts.path)

	c.send(`{"jsonrpc": "2.0", "method": "echo", "id": 1`) // truncated
	resp := c.recv()
	if resp.Error == nil || resp.Error.Code != ParseError {
		t.Fatalf("malformed line got %+v, want a ParseError", resp)
	}
	if string(resp.ID) != "null" {
		t.Errorf("ParseError id = %s, want null", resp.ID)
	}

	c.send(`{"jsonrpc":"2.0","id":7,"method":"echo","params":{"x":1}}`)
	resp = c.recv()
	if resp.Error != nil {
		t.Fatalf("valid request after malformed line: %v", resp.Error)
	}
	if string(resp.ID) != "7" || string(resp.Result) != `{"x":1}` {
		t.Errorf("got id %s result %s, want id 7 result {\"x\":1}", resp.ID, resp.Result)
	}
}

func TestRequestErrors(t *testing.T) {
	ts := start(t, socketPath(t), testHandlers())
	tests := []struct {
		name     string
		line     string
		wantCode int
		wantID   string
	}{
		{"not JSON", `hello`, ParseError, `null`},
		{"truncated object", `{"jsonrpc":"2.0"`, ParseError, `null`},
		{"two values on a line", `{} {}`, ParseError, `null`},
		{"empty batch", `[]`, InvalidRequest, `null`},
		{"batch", `[{"jsonrpc":"2.0","id":1,"method":"echo"}]`, InvalidRequest, `null`},
		{"number", `42`, InvalidRequest, `null`},
		{"string", `"echo"`, InvalidRequest, `null`},
		{"null", `null`, InvalidRequest, `null`},
		{"empty object", `{}`, InvalidRequest, `null`},
		{"no jsonrpc and no id", `{"method":"echo"}`, InvalidRequest, `null`},
		{"no jsonrpc", `{"id":1,"method":"echo"}`, InvalidRequest, `1`},
		{"jsonrpc 1.0", `{"jsonrpc":"1.0","id":1,"method":"echo"}`, InvalidRequest, `1`},
		{"jsonrpc as a number", `{"jsonrpc":2.0,"id":1,"method":"echo"}`, InvalidRequest, `1`},
		{"no method", `{"jsonrpc":"2.0","id":"a"}`, InvalidRequest, `"a"`},
		{"method is a number", `{"jsonrpc":"2.0","id":2,"method":5}`, InvalidRequest, `2`},
		{"method is null", `{"jsonrpc":"2.0","id":2,"method":null}`, InvalidRequest, `2`},
		{"params is a string", `{"jsonrpc":"2.0","id":3,"method":"echo","params":"x"}`, InvalidRequest, `3`},
		{"params is a number", `{"jsonrpc":"2.0","id":3,"method":"echo","params":1}`, InvalidRequest, `3`},
		{"id is an object", `{"jsonrpc":"2.0","id":{},"method":"echo"}`, InvalidRequest, `null`},
		{"id is an array", `{"jsonrpc":"2.0","id":[1],"method":"echo"}`, InvalidRequest, `null`},
		{"id is a bool", `{"jsonrpc":"2.0","id":true,"method":"echo"}`, InvalidRequest, `null`},
		{"unknown method", `{"jsonrpc":"2.0","id":4,"method":"enable_tool"}`, MethodNotFound, `4`},
		{"method names are case-sensitive", `{"jsonrpc":"2.0","id":5,"method":"ECHO"}`, MethodNotFound, `5`},
	}
	// One connection for all rows: an error reply must never end the connection.
	c := dial(t, ts.path)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c.t = t
			c.send(tt.line)
			resp := c.recv()
			if resp.Error == nil {
				t.Fatalf("got result %s, want error %d", resp.Result, tt.wantCode)
			}
			if resp.Error.Code != tt.wantCode || string(resp.ID) != tt.wantID {
				t.Errorf("got code %d id %s (%q), want code %d id %s",
					resp.Error.Code, resp.ID, resp.Error.Message, tt.wantCode, tt.wantID)
			}
		})
	}
}

func TestNotificationsGetNoReply(t *testing.T) {
	ts := start(t, socketPath(t), testHandlers())
	c := dial(t, ts.path)
	c.send(
		`{"jsonrpc":"2.0","method":"count"}`,
		``, // blank lines are ignored
		`{"jsonrpc":"2.0","method":"no_such_method"}`,
		`{"jsonrpc":"2.0","method":"fail"}`,
		`{"jsonrpc":"2.0","method":"panic"}`,
		`{"jsonrpc":"2.0","id":9,"method":"count"}`,
	)
	// The first reply is the request's, and requests run in order, so the notification ran first.
	resp := c.recv()
	if string(resp.ID) != "9" || string(resp.Result) != "2" {
		t.Errorf("first reply id %s result %s error %v, want id 9 result 2", resp.ID, resp.Result, resp.Error)
	}
}

func TestPipelinedRequestsAnsweredInOrder(t *testing.T) {
	ts := start(t, socketPath(t), testHandlers())
	c := dial(t, ts.path)
	var lines []string
	for _, id := range []string{`"a"`, `2`, `null`, `-3.5`} {
		lines = append(lines, `{"jsonrpc":"2.0","method":"echo","params":[`+id+`],"id":`+id+`}`)
	}
	c.send(lines...)
	for _, id := range []string{`"a"`, `2`, `null`, `-3.5`} {
		resp := c.recv()
		if string(resp.ID) != id || string(resp.Result) != "["+id+"]" {
			t.Errorf("got id %s result %s, want id %s result [%s]", resp.ID, resp.Result, id, id)
		}
	}
}

func TestOversizedLine(t *testing.T) {
	ts := start(t, socketPath(t), testHandlers())
	req := `{"jsonrpc":"2.0","id":1,"method":"echo","params":[]}`
	pad := func(n int) string { return req + strings.Repeat(" ", n-len(req)) }

	t.Run("exactly MaxLineBytes is served", func(t *testing.T) {
		c := dial(t, ts.path)
		go func() { _, _ = io.WriteString(c.conn, pad(MaxLineBytes)+"\n") }()
		resp := c.recv()
		if resp.Error != nil || string(resp.Result) != "[]" {
			t.Fatalf("got %+v, want result []", resp)
		}
		c.send(`{"jsonrpc":"2.0","id":2,"method":"echo"}`)
		if resp := c.recv(); string(resp.ID) != "2" {
			t.Errorf("next request got id %s, want 2", resp.ID)
		}
	})

	t.Run("one byte more gets ParseError and the connection closes", func(t *testing.T) {
		c := dial(t, ts.path)
		// The server stops reading mid-line, so the write may fail; only the reply matters.
		go func() { _, _ = io.WriteString(c.conn, pad(MaxLineBytes+1)+"\n") }()
		resp := c.recv()
		if resp.Error == nil || resp.Error.Code != ParseError || string(resp.ID) != "null" {
			t.Fatalf("got %+v, want a ParseError with id null", resp)
		}
		_, err := c.r.ReadBytes('\n')
		if err == nil || errors.Is(err, os.ErrDeadlineExceeded) {
			t.Errorf("read after the oversized line = %v, want the connection closed", err)
		}
	})
}

func TestIdleConnectionIsClosed(t *testing.T) {
	ts := start(t, socketPath(t), testHandlers(), func(s *Server) { s.idleTimeout = 50 * time.Millisecond })
	tests := []struct {
		name string
		send string
	}{
		{"silent client", ""},
		{"half a line", `{"jsonrpc":"2.0",`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := dial(t, ts.path)
			if _, err := io.WriteString(c.conn, tt.send); err != nil {
				t.Fatal(err)
			}
			// The read blocks until the server gives up on us (or testTimeout fails it).
			if _, err := c.r.ReadByte(); !errors.Is(err, io.EOF) {
				t.Errorf("read on idle connection = %v, want io.EOF", err)
			}
		})
	}
}
