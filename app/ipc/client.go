package ipc

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net"
	"os"
	"syscall"
	"time"
)

// ErrNotRunning is wrapped by Call's error when no daemon listens on the socket.
var ErrNotRunning = errors.New("maven daemon is not running")

// maxResponseBytes bounds what Call reads; replies (tool lists) may exceed MaxLineBytes.
const maxResponseBytes = 64 << 20

// Call sends one request to the daemon at socketPath and waits for its reply, within ctx's
// deadline. On success the result is decoded into result unless result is nil. A JSON-RPC error
// reply is returned as an *Error. If no daemon listens, the error wraps ErrNotRunning and the
// dial error.
func Call(ctx context.Context, socketPath, method string, params, result any) error {
	req := struct {
		JSONRPC string `json:"jsonrpc"`
		ID      int    `json:"id"`
		Method  string `json:"method"`
		Params  any    `json:"params,omitempty"`
	}{JSONRPC: "2.0", ID: 1, Method: method, Params: params}
	line, err := json.Marshal(req)
	if err != nil {
		return fmt.Errorf("ipc: %s: encode request: %w", method, err)
	}

	var d net.Dialer
	conn, err := d.DialContext(ctx, "unix", socketPath)
	if err != nil {
		return dialError(ctx, socketPath, err)
	}
	defer conn.Close()
	if dl, ok := ctx.Deadline(); ok {
		_ = conn.SetDeadline(dl)
	}
	// Cancellation without a deadline must still unblock the read below.
	stop := context.AfterFunc(ctx, func() { _ = conn.SetDeadline(time.Unix(1, 0)) })
	defer stop()

	if _, err := conn.Write(append(line, '\n')); err != nil {
		return ioError(ctx, method, "send request", err)
	}
	sc := bufio.NewScanner(conn)
	sc.Buffer(make([]byte, 0, 4096), maxResponseBytes)
	if !sc.Scan() {
		err := sc.Err()
		if err == nil {
			err = fmt.Errorf("daemon closed the connection without replying: %w", io.ErrUnexpectedEOF)
		}
		return ioError(ctx, method, "read reply", err)
	}

	var resp struct {
		ID     json.RawMessage `json:"id"`
		Result json.RawMessage `json:"result"`
		Error  *Error          `json:"error"`
	}
	if err := json.Unmarshal(sc.Bytes(), &resp); err != nil {
		return fmt.Errorf("ipc: %s: malformed reply from daemon: %w", method, err)
	}
	if resp.Error != nil {
		return resp.Error
	}
	if resp.Result == nil {
		return fmt.Errorf("ipc: %s: reply has neither result nor error", method)
	}
	if id := bytes.TrimSpace(resp.ID); string(id) != "1" {
		return fmt.Errorf("ipc: %s: reply id %s does not match request id 1", method, id)
	}
	if result != nil {
		if err := json.Unmarshal(resp.Result, result); err != nil {
			return fmt.Errorf("ipc: %s: decode result: %w", method, err)
		}
	}
	return nil
}

func dialError(ctx context.Context, path string, err error) error {
	switch {
	case ctx.Err() != nil:
		return fmt.Errorf("ipc: connect to %s: %w", path, context.Cause(ctx))
	case errors.Is(err, os.ErrDeadlineExceeded):
		return ioError(ctx, "connect", path, err)
	case errors.Is(err, fs.ErrNotExist):
		return fmt.Errorf("%w (no socket at %s): %w", ErrNotRunning, path, err)
	case errors.Is(err, syscall.ECONNREFUSED):
		return fmt.Errorf("%w (stale socket at %s): %w", ErrNotRunning, path, err)
	}
	return fmt.Errorf("ipc: cannot reach maven daemon at %s: %w", path, err)
}

// ioError reports a context's expiry as such rather than as the deadline it set on the socket.
func ioError(ctx context.Context, what, op string, err error) error {
	if errors.Is(err, os.ErrDeadlineExceeded) {
		if cerr := ctx.Err(); cerr != nil {
			return fmt.Errorf("ipc: %s: %s: %w", what, op, context.Cause(ctx))
		}
		if _, ok := ctx.Deadline(); ok {
			// The socket deadline can fire a moment before ctx records its own expiry.
			return fmt.Errorf("ipc: %s: %s: %w", what, op, context.DeadlineExceeded)
		}
	}
	return fmt.Errorf("ipc: %s: %s: %w", what, op, err)
}
