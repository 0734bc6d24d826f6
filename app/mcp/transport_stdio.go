package mcp

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"maven/app/config"
	"maven/app/runner"
)

// stdioTransport is the command transport of a stdio server: its own process group (killed
// whole once killCtx is cancelled), a minimal environment, and stderr to the debug log.
func (s *supervisor) stdioTransport(cfg config.Server, killCtx context.Context) (sdk.Transport, error) {
	path, err := s.lookCommand(cfg)
	if err != nil {
		return nil, err
	}
	cmd := exec.CommandContext(killCtx, path, cfg.Args...)
	getenv := s.m.opts.Getenv
	if getenv == nil {
		getenv = os.Getenv
	}
	cmd.Env = runner.Environ(getenv, cfg.Env)
	cmd.Dir = cfg.Cwd
	cmd.Stderr = &stderrLog{logger: s.logger}
	// The daemon closes it in order (stdin, SIGTERM) before the kill, which reaches whatever it
	// spawned.
	runner.InOwnProcessGroup(cmd)
	cmd.WaitDelay = time.Second
	return &sdk.CommandTransport{Command: cmd, TerminateDuration: s.m.opts.TerminateDuration}, nil
}

// lookCommand finds the executable of cfg (secrets expanded) as the child would: relative to
// its working directory, else on PATH. Its errors name the command as configured: the expanded
// one may hold a secret.
func (s *supervisor) lookCommand(cfg config.Server) (string, error) {
	if cfg.Cwd != "" {
		// Checked here because a failed chdir in the child is reported as the command missing.
		fi, err := os.Stat(cfg.Cwd)
		if err != nil {
			return "", fmt.Errorf("working directory %q: %w", cfg.Cwd, errors.Unwrap(err))
		}
		if !fi.IsDir() {
			return "", fmt.Errorf("working directory %q is not a directory", cfg.Cwd)
		}
	}
	path := cfg.Command
	if strings.ContainsRune(path, '/') && !filepath.IsAbs(path) && cfg.Cwd != "" {
		path = filepath.Join(cfg.Cwd, path)
	}
	path, err := exec.LookPath(path)
	switch {
	case err == nil:
		return path, nil
	case errors.Is(err, exec.ErrNotFound):
		return "", fmt.Errorf("command %q not found on PATH: %w", s.cfg.Command, exec.ErrNotFound)
	case errors.Is(err, fs.ErrPermission):
		return "", fmt.Errorf("command %q is not executable: %w", s.cfg.Command, fs.ErrPermission)
	case errors.Is(err, fs.ErrNotExist):
		return "", fmt.Errorf("command %q does not exist: %w", s.cfg.Command, fs.ErrNotExist)
	}
	return "", fmt.Errorf("command %q cannot be run", s.cfg.Command)
}

// isStartError reports whether a stdio dial failed because the process could not start.
func isStartError(err error) bool {
	var ee *exec.Error
	var pe *fs.PathError
	return errors.As(err, &ee) || errors.As(err, &pe)
}

// startError describes a stdio server that could not start, naming the command as configured.
func (s *supervisor) startError(err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return fmt.Errorf("start %q: %w", s.cfg.Command, pe.Err)
	}
	var ee *exec.Error
	if errors.As(err, &ee) {
		return fmt.Errorf("start %q: %w", s.cfg.Command, ee.Err)
	}
	return fmt.Errorf("start %q: %w", s.cfg.Command, err)
}

// stderrLog logs a stdio server's stderr line by line at debug level. It may hold secrets the
// server echoes, so it is never shown as the server's status.
type stderrLog struct {
	logger *slog.Logger
	buf    []byte
}

const maxStderrLine = 1024

func (w *stderrLog) Write(p []byte) (int, error) {
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
		if line := strings.TrimSpace(string(w.buf)); line != "" {
			w.logger.Debug("mcp server stderr", "line", line)
		}
		w.buf = w.buf[:0]
		p = p[i+1:]
	}
	return n, nil
}
