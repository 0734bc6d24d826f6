package ipc

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

func TestCallParamsReachHandler(t *testing.T) {
	ts := start(t, socketPath(t), testHandlers())
	ctx := testCtx(t)

	type point struct {
		X    int      `json:"x"`
		Tags []string `json:"tags"`
	}
	want := point{X: 3, Tags: []string{"a", "ü"}}
	var got point
	if err := Call(ctx, ts.path, "echo", want, &got); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("echo (-want +got):\n%s", diff)
	}

	var sum struct{ Sum int }
	if err := Call(ctx, ts.path, "sum", map[string]int{"a": 2, "b": 3}, &sum); err != nil {
		t.Fatal(err)
	}
	if sum.Sum != 5 {
		t.Errorf("sum = %d, want 5", sum.Sum)
	}

	var seen map[string]any
	if err := Call(ctx, ts.path, "params", nil, &seen); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(map[string]any{"nil": true, "raw": ""}, seen); diff != "" {
		t.Errorf("handler saw (-want +got) for absent params:\n%s", diff)
	}

	// A nil result pointer discards the result.
	if err := Call(ctx, ts.path, "echo", []int{1}, nil); err != nil {
		t.Fatal(err)
	}
}

func TestCallHandlerErrors(t *testing.T) {
	ts := start(t, socketPath(t), testHandlers())
	tests := []struct {
		name    string
		method  string
		params  any
		want    *Error
		wantLog string
	}{
		{"handler *Error passes through, wrapped or not", "rpcerr", nil,
			&Error{Code: 4001, Message: "no such tool", Data: map[string]any{"name": "x"}}, ""},
		{"plain error is hidden and logged", "fail", nil,
			&Error{Code: InternalError, Message: genericInternal}, "database exploded at /secret/path"},
		{"panic becomes InternalError", "panic", nil,
			&Error{Code: InternalError, Message: genericInternal}, "boom"},
		{"unencodable result", "badresult", nil,
			&Error{Code: InternalError, Message: genericInternal}, "cannot encode result"},
		{"unencodable error data is dropped", "baddata", nil,
			&Error{Code: 4002, Message: "with bad data"}, "cannot encode error data"},
		{"bad params", "sum", map[string]any{"a": 1, "c": 2},
			&Error{Code: InvalidParams, Message: `invalid params: json: unknown field "c"`}, ""},
		{"unknown method", "enable_tool", nil,
			&Error{Code: MethodNotFound, Message: `method "enable_tool" not found`}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := Call(testCtx(t), ts.path, tt.method, tt.params, nil)
			var got *Error
			if !errors.As(err, &got) {
				t.Fatalf("Call = %v, want an *Error", err)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("error (-want +got):\n%s", diff)
			}
			if tt.wantLog != "" && !strings.Contains(ts.logs.String(), tt.wantLog) {
				t.Errorf("log lacks %q:\n%s", tt.wantLog, ts.logs)
			}
		})
	}
	// A panicking handler does not take the server down.
	if err := Call(testCtx(t), ts.path, "echo", nil, nil); err != nil {
		t.Errorf("Call after the error cases: %v", err)
	}
}

func TestConcurrentClients(t *testing.T) {
	ts := start(t, socketPath(t), testHandlers())
	const clients, callsEach = 50, 5
	var wg sync.WaitGroup
	errs := make(chan error, clients*callsEach)
	for i := range clients {
		wg.Go(func() {
			for j := range callsEach {
				n := i*callsEach + j
				var got struct{ N int }
				if err := Call(testCtx(t), ts.path, "echo", map[string]int{"n": n}, &got); err != nil {
					errs <- err
					continue
				}
				if got.N != n {
					errs <- fmt.Errorf("client %d got answer %d, want %d", i, got.N, n)
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}

func TestCallNotRunning(t *testing.T) {
	missing := filepath.Join(shortDir(t), "maven.sock")
	err := Call(testCtx(t), missing, "status", nil, nil)
	if !errors.Is(err, ErrNotRunning) || !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("missing socket: %v, want ErrNotRunning wrapping ENOENT", err)
	}
	if err != nil && !strings.Contains(err.Error(), "no socket at "+missing) {
		t.Errorf("missing socket error %q does not name the path", err)
	}

	stale := filepath.Join(shortDir(t), "maven.sock")
	ln, lerr := net.ListenUnix("unix", &net.UnixAddr{Name: stale, Net: "unix"})
	if lerr != nil {
		t.Fatal(lerr)
	}
	ln.SetUnlinkOnClose(false)
	_ = ln.Close()
	err = Call(testCtx(t), stale, "status", nil, nil)
	if !errors.Is(err, ErrNotRunning) || !errors.Is(err, syscall.ECONNREFUSED) {
		t.Errorf("stale socket: %v, want ErrNotRunning wrapping ECONNREFUSED", err)
	}
}

func TestCallRespectsContext(t *testing.T) {
	started := make(chan struct{}, 1)
	release := make(chan struct{})
	t.Cleanup(func() { close(release) })
	wait := func(ctx context.Context) {
		select {
		case <-release:
		case <-ctx.Done():
		}
	}
	ts := start(t, socketPath(t), map[string]HandlerFunc{
		"wait": func(ctx context.Context, _ json.RawMessage) (any, error) {
			wait(ctx)
			return nil, nil
		},
		"signal_and_wait": func(ctx context.Context, _ json.RawMessage) (any, error) {
			started <- struct{}{}
			wait(ctx)
			return nil, nil
		},
	})

	t.Run("deadline", func(t *testing.T) {
		// Under load the deadline may even pass before the request is sent; the result is the same.
		ctx, cancel := context.WithTimeout(testCtx(t), 100*time.Millisecond)
		defer cancel()
		if err := Call(ctx, ts.path, "wait", nil, nil); !errors.Is(err, context.DeadlineExceeded) {
			t.Errorf("Call = %v, want context.DeadlineExceeded", err)
		}
	})
	t.Run("cancel", func(t *testing.T) {
		ctx, cancel := context.WithCancel(testCtx(t))
		errc := make(chan error, 1)
		go func() { errc <- Call(ctx, ts.path, "signal_and_wait", nil, nil) }()
		select {
		case <-started:
		case <-time.After(testTimeout):
			t.Fatal("handler never started")
		}
		cancel()
		select {
		case err := <-errc:
			if !errors.Is(err, context.Canceled) {
				t.Errorf("Call = %v, want context.Canceled", err)
			}
		case <-time.After(testTimeout):
			t.Fatal("Call ignored cancellation")
		}
	})
	t.Run("already cancelled", func(t *testing.T) {
		ctx, cancel := context.WithCancel(testCtx(t))
		cancel()
		if err := Call(ctx, ts.path, "wait", nil, nil); !errors.Is(err, context.Canceled) {
			t.Errorf("Call = %v, want context.Canceled", err)
		}
	})
}

// TestCallBadReplies checks Call against a fake daemon that answers whatever the test says.
func TestCallBadReplies(t *testing.T) {
	tests := []struct {
		name    string
		reply   string // "" closes without replying
		wantErr string
	}{
		{"closes without replying", "", "without replying"},
		{"not JSON", "nonsense\n", "malformed reply"},
		{"neither result nor error", `{"jsonrpc":"2.0","id":1}` + "\n", "neither result nor error"},
		{"wrong id", `{"jsonrpc":"2.0","id":2,"result":1}` + "\n", "does not match"},
		{"result of the wrong type", `{"jsonrpc":"2.0","id":1,"result":"x"}` + "\n", "decode result"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := filepath.Join(shortDir(t), "fake.sock")
			ln, err := net.Listen("unix", path)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = ln.Close() })
			served := make(chan error, 1)
			go func() {
				conn, err := ln.Accept()
				if err != nil {
					served <- err
					return
				}
				defer conn.Close()
				if _, err := bufio.NewReader(conn).ReadBytes('\n'); err != nil {
					served <- err
					return
				}
				_, err = conn.Write([]byte(tt.reply))
				served <- err
			}()

			var result int
			err = Call(testCtx(t), path, "status", nil, &result)
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Errorf("Call = %v, want an error containing %q", err, tt.wantErr)
			}
			waitErr(t, served, "fake daemon")
		})
	}
}

func TestDecodeParams(t *testing.T) {
	type params struct {
		Name string `json:"name"`
	}
	tests := []struct {
		name    string
		raw     string
		want    params
		wantErr bool
	}{
		{"absent leaves defaults", "", params{Name: "default"}, false},
		{"object", `{"name":"x"}`, params{Name: "x"}, false},
		{"unknown field", `{"name":"x","nmae":"y"}`, params{}, true},
		{"wrong type", `{"name":1}`, params{}, true},
		{"trailing data", `{"name":"x"} {}`, params{}, true},
		{"array for an object", `["x"]`, params{}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := params{Name: "default"}
			var raw json.RawMessage
			if tt.raw != "" {
				raw = json.RawMessage(tt.raw)
			}
			err := DecodeParams(raw, &got)
			if tt.wantErr {
				var rpcErr *Error
				if !errors.As(err, &rpcErr) || rpcErr.Code != InvalidParams {
					t.Errorf("DecodeParams = %v, want an *Error with InvalidParams", err)
				}
				return
			}
			if err != nil {
				t.Fatalf("DecodeParams: %v", err)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("decoded (-want +got):\n%s", diff)
			}
		})
	}
}

func TestErrorString(t *testing.T) {
	err := error(&Error{Code: MethodNotFound, Message: `method "x" not found`})
	if got, want := err.Error(), `method "x" not found (JSON-RPC error -32601)`; got != want {
		t.Errorf("Error() = %q, want %q", got, want)
	}
}

// TestSocketPathHelper guards the helper the other tests rely on.
func TestSocketPathHelper(t *testing.T) {
	path := socketPath(t)
	if len(path) > maxSocketPath-5 {
		t.Errorf("socketPath returned %d bytes, too long for sun_path", len(path))
	}
	if _, err := os.Stat(filepath.Dir(path)); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("socketPath's directory should not exist yet: %v", err)
	}
}
