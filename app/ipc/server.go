package ipc

import (
	"bufio"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"maps"
	"net"
	"os"
	"path/filepath"
	"sync"
	"syscall"
	"time"
)

// MaxLineBytes is the longest request line the server reads, newline excluded.
const MaxLineBytes = 1 << 20

// IdleTimeout is how long a connection may wait for its next complete line before it is closed,
// so a stuck client cannot pin a goroutine forever.
const IdleTimeout = 60 * time.Second

const (
	writeTimeout = 10 * time.Second
	probeTimeout = time.Second
	// maxSocketPath keeps room for the terminating NUL in sockaddr_un's 108-byte sun_path.
	maxSocketPath = 107
)

// ErrAlreadyRunning is returned by Listen when a live daemon already answers on the socket.
var ErrAlreadyRunning = errors.New("another maven daemon is already running")

// ErrServerClosed is returned by Listen after Close.
var ErrServerClosed = errors.New("ipc: server closed")

// Server serves JSON-RPC requests on a Unix socket. Use NewServer, then Listen, then Serve.
type Server struct {
	logger      *slog.Logger
	handlers    map[string]HandlerFunc
	idleTimeout time.Duration

	// ctx is the parent of every handler's context; Close cancels it.
	ctx    context.Context
	cancel context.CancelFunc

	mu     sync.Mutex
	ln     *net.UnixListener
	path   string
	sock   os.FileInfo // the socket file we created, so Close never removes another's
	conns  map[net.Conn]struct{}
	closed bool
	wg     sync.WaitGroup // one per connection goroutine

	closeOnce sync.Once
	closeErr  error
	closeDone chan struct{}
}

// NewServer returns a server answering the given methods. The map is copied. A nil logger
// discards logs.
func NewServer(logger *slog.Logger, handlers map[string]HandlerFunc) *Server {
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	ctx, cancel := context.WithCancel(context.Background())
	return &Server{
		logger:      logger,
		handlers:    maps.Clone(handlers),
		idleTimeout: IdleTimeout,
		ctx:         ctx,
		cancel:      cancel,
		conns:       make(map[net.Conn]struct{}),
		closeDone:   make(chan struct{}),
	}
}

// Listen creates the socket at path, mode 0600, creating its directory (0700) if missing. It
// returns an error wrapping ErrAlreadyRunning if a daemon already answers there, and replaces a
// stale socket left by a daemon that died.
func (s *Server) Listen(path string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return ErrServerClosed
	}
	if s.ln != nil {
		return fmt.Errorf("ipc: already listening on %s", s.path)
	}

	dir := filepath.Dir(path)
	var rnd [4]byte
	_, _ = rand.Read(rnd[:]) // never fails (crypto/rand panics instead)
	tmp := filepath.Join(dir, ".ipc"+hex.EncodeToString(rnd[:]))
	if len(path) > maxSocketPath || len(tmp) > maxSocketPath {
		return fmt.Errorf("ipc: socket path %s is too long for a Unix socket (limit about %d bytes)", path, maxSocketPath)
	}
	if err := s.ensureDir(dir); err != nil {
		return err
	}
	if err := s.clearStale(path); err != nil {
		return err
	}

	// Bind under a temporary name and publish the socket only once it is 0600, so it is never
	// reachable at path with the umask's looser mode.
	ln, err := net.ListenUnix("unix", &net.UnixAddr{Name: tmp, Net: "unix"})
	if err != nil {
		return fmt.Errorf("ipc: listen: %w", err)
	}
	ln.SetUnlinkOnClose(false) // we remove path ourselves; the bound name is gone by then
	abort := func() {
		_ = ln.Close()
		_ = os.Remove(tmp)
	}
	if err := os.Chmod(tmp, 0o600); err != nil {
		abort()
		return fmt.Errorf("ipc: restrict socket mode: %w", err)
	}
	// Link rather than rename: link refuses to replace an existing file, so a daemon that won a
	// start-up race keeps its socket instead of silently losing it to us.
	if err := os.Link(tmp, path); err != nil {
		abort()
		if errors.Is(err, fs.ErrExist) {
			return fmt.Errorf("%w (%s appeared while this one was starting)", ErrAlreadyRunning, path)
		}
		return fmt.Errorf("ipc: publish socket: %w", err)
	}
	if err := os.Remove(tmp); err != nil {
		s.logger.Warn("ipc: cannot remove temporary socket name", "path", tmp, "err", err)
	}
	fi, err := os.Lstat(path)
	if err != nil {
		_ = ln.Close()
		return fmt.Errorf("ipc: stat socket: %w", err)
	}
	s.ln, s.path, s.sock = ln, path, fi
	return nil
}

// ensureDir creates the socket's directory owner-only if missing. An existing directory is left
// as the owner set it, with a warning if others can enter it.
func (s *Server) ensureDir(dir string) error {
	fi, err := os.Stat(dir)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		if err := os.MkdirAll(dir, 0o700); err != nil {
			return fmt.Errorf("ipc: create socket directory: %w", err)
		}
		// MkdirAll honours the umask; 0700 is the point, whatever the umask says.
		if err := os.Chmod(dir, 0o700); err != nil {
			return fmt.Errorf("ipc: restrict socket directory: %w", err)
		}
		return nil
	case err != nil:
		return fmt.Errorf("ipc: socket directory: %w", err)
	case !fi.IsDir():
		return fmt.Errorf("ipc: socket directory %s is not a directory", dir)
	}
	if fi.Mode().Perm()&0o077 != 0 {
		s.logger.Warn("ipc: socket directory is accessible to group or others; consider chmod 700",
			"dir", dir, "mode", fi.Mode().Perm().String())
	}
	return nil
}

// clearStale makes sure nothing live is at path, removing a socket nobody listens on.
func (s *Server) clearStale(path string) error {
	fi, err := os.Lstat(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("ipc: inspect socket path: %w", err)
	}
	if fi.Mode().Type() != fs.ModeSocket {
		return fmt.Errorf("ipc: %s exists and is not a socket; refusing to replace it", path)
	}
	conn, err := net.DialTimeout("unix", path, probeTimeout)
	if err == nil {
		_ = conn.Close()
		return fmt.Errorf("%w (a daemon answers on %s)", ErrAlreadyRunning, path)
	}
	if !errors.Is(err, syscall.ECONNREFUSED) {
		return fmt.Errorf("ipc: cannot tell whether a daemon listens on %s: %w", path, err)
	}
	if err := os.Remove(path); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("ipc: remove stale socket: %w", err)
	}
	s.logger.Info("ipc: removed stale socket", "path", path)
	return nil
}

// Serve accepts connections until ctx is done or Close is called, then returns nil once Close
// has finished (connections closed, handlers returned, socket removed); it also returns nil if
// the server was already closed. Any other accept failure closes the server and is returned.
func (s *Server) Serve(ctx context.Context) error {
	s.mu.Lock()
	ln, closed := s.ln, s.closed
	s.mu.Unlock()
	if closed {
		// Closed before Serve got going: the same clean stop as a Close while serving, so a
		// quick shutdown after `go Serve(ctx)` never looks like a failure.
		<-s.closeDone
		return nil
	}
	if ln == nil {
		return errors.New("ipc: Serve called before Listen")
	}
	stop := context.AfterFunc(ctx, func() { _ = s.Close() })
	defer stop()

	var delay time.Duration
	for {
		conn, err := ln.Accept()
		if err != nil {
			if s.isClosed() {
				<-s.closeDone
				return nil
			}
			if transientAcceptError(err) {
				// Out of descriptors and the like: back off rather than spin, as net/http does.
				delay = min(max(2*delay, 5*time.Millisecond), time.Second)
				s.logger.Warn("ipc: accept failed; retrying", "err", err, "delay", delay)
				select {
				case <-time.After(delay):
				case <-s.closeDone:
				}
				continue
			}
			_ = s.Close()
			return fmt.Errorf("ipc: accept: %w", err)
		}
		delay = 0
		if !s.track(conn) {
			_ = conn.Close()
			<-s.closeDone
			return nil
		}
		go s.serveConn(conn)
	}
}

func transientAcceptError(err error) bool {
	for _, errno := range []syscall.Errno{syscall.EMFILE, syscall.ENFILE, syscall.ENOBUFS, syscall.ENOMEM, syscall.ECONNABORTED, syscall.EINTR} {
		if errors.Is(err, errno) {
			return true
		}
	}
	return false
}

func (s *Server) isClosed() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.closed
}

// track registers a connection so Close can reach it; false means the server is closing.
func (s *Server) track(conn net.Conn) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return false
	}
	s.conns[conn] = struct{}{}
	s.wg.Add(1)
	return true
}

func (s *Server) untrack(conn net.Conn) {
	_ = conn.Close()
	s.mu.Lock()
	delete(s.conns, conn)
	s.mu.Unlock()
	s.wg.Done()
}

// serveConn answers the requests of one connection in order until it ends, idles out, sends an
// oversized line or the server closes.
func (s *Server) serveConn(conn net.Conn) {
	defer s.untrack(conn)
	r := bufio.NewReader(conn)
	var buf []byte
	for {
		if err := conn.SetReadDeadline(time.Now().Add(s.idleTimeout)); err != nil {
			return
		}
		line, err := readLine(r, buf, MaxLineBytes)
		switch {
		case errors.Is(err, errLineTooLong):
			s.logger.Warn("ipc: request line too long; closing connection", "limit", MaxLineBytes)
			msg := fmt.Sprintf("parse error: request line longer than %d bytes", MaxLineBytes)
			_ = s.write(conn, s.encode(nullID, nil, &Error{Code: ParseError, Message: msg}))
			return
		case errors.Is(err, os.ErrDeadlineExceeded):
			s.logger.Debug("ipc: closing idle connection")
			return
		case err != nil:
			if !errors.Is(err, io.EOF) && !errors.Is(err, net.ErrClosed) {
				s.logger.Debug("ipc: read failed", "err", err)
			}
			return
		}
		resp := s.handleLine(s.ctx, line)
		buf = line[:0]
		if cap(buf) > 64<<10 {
			buf = nil // do not pin a megabyte per connection after one large request
		}
		if resp == nil {
			continue
		}
		if err := s.write(conn, resp); err != nil {
			s.logger.Debug("ipc: write failed", "err", err)
			return
		}
	}
}

var errLineTooLong = errors.New("line too long")

// readLine returns the next line without its newline, reusing buf. A final line cut off by EOF
// is returned; one cut off by any other error (an idle timeout, a reset) is dropped rather than
// run as a request. A line longer than limit gives errLineTooLong without reading it all.
func readLine(r *bufio.Reader, buf []byte, limit int) ([]byte, error) {
	buf = buf[:0]
	for {
		chunk, err := r.ReadSlice('\n')
		most := limit
		if err == nil {
			most++ // the newline itself
		}
		if len(buf)+len(chunk) > most {
			return nil, errLineTooLong
		}
		buf = append(buf, chunk...)
		switch {
		case err == nil:
			return buf[:len(buf)-1], nil
		case errors.Is(err, bufio.ErrBufferFull):
			continue
		case errors.Is(err, io.EOF) && len(buf) > 0:
			return buf, nil
		default:
			return nil, err
		}
	}
}

func (s *Server) write(conn net.Conn, resp []byte) error {
	if err := conn.SetWriteDeadline(time.Now().Add(writeTimeout)); err != nil {
		return err
	}
	_, err := conn.Write(append(resp, '\n'))
	return err
}

// Close stops accepting, cancels handler contexts, closes open connections, waits for handlers
// to return and removes the socket file (only if it is still the one this server created). It
// is safe to call more than once and concurrently; later calls return the first call's result.
// A handler must not call it: Close waits for handlers to return.
func (s *Server) Close() error {
	s.closeOnce.Do(func() {
		s.closeErr = s.shutdown()
		close(s.closeDone)
	})
	return s.closeErr
}

func (s *Server) shutdown() error {
	s.mu.Lock()
	s.closed = true
	ln, path, sock := s.ln, s.path, s.sock
	conns := make([]net.Conn, 0, len(s.conns))
	for c := range s.conns {
		conns = append(conns, c)
	}
	s.mu.Unlock()

	s.cancel()
	var errs []error
	if ln != nil {
		if err := ln.Close(); err != nil && !errors.Is(err, net.ErrClosed) {
			errs = append(errs, fmt.Errorf("ipc: close listener: %w", err))
		}
	}
	for _, c := range conns {
		_ = c.Close()
	}
	s.wg.Wait()

	if sock != nil {
		// A daemon that replaced a socket it believed stale owns path now; leave its file alone.
		if fi, err := os.Lstat(path); err == nil && os.SameFile(fi, sock) {
			if err := os.Remove(path); err != nil && !errors.Is(err, fs.ErrNotExist) {
				errs = append(errs, fmt.Errorf("ipc: remove socket: %w", err))
			}
		}
	}
	return errors.Join(errs...)
}
