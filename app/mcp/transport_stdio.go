package mcp

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"maven/app/config"
	"maven/app/runner"
)

// stdioTransport is the command transport of a stdio server: its own process group (killed
// whole once killCtx is cancelled), a minimal environment, and stderr to the debug log and to
// s.child, which keeps its last lines and how the process ended.
func (s *supervisor) stdioTransport(cfg config.Server, killCtx context.Context) (sdk.Transport, error) {
	s.child = nil
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
	child := &stdioChild{stderr: newStderrTail(s.logger, s.stderrMask())}
	cmd.Stderr = child.stderr
	// The daemon closes it in order (stdin, SIGTERM) before the kill, which reaches whatever it
	// spawned.
	runner.InOwnProcessGroup(cmd)
	cmd.WaitDelay = time.Second
	s.child = child
	return &childTransport{Transport: &sdk.CommandTransport{Command: cmd, TerminateDuration: s.m.opts.TerminateDuration}, child: child}, nil
}

// stderrMask masks, in a line of the server's stderr, the secret values it was given: those of
// its ${secret:…} references, and the values its env holds written out under a name that looks
// like a credential's (BRAVE_API_KEY). Only values written in the config are kept for this: a
// secret's own value is masked through secretVals, which a lock zeroes.
func (s *supervisor) stderrMask() func(string) string {
	var literal []string
	for k, v := range s.cfg.Env {
		if len(v) >= minMaskedValue && config.SecretLike(k) && !strings.Contains(v, "${") {
			literal = append(literal, v)
		}
	}
	// Longest first, so a value that contains another is masked whole.
	slices.SortFunc(literal, func(a, b string) int { return len(b) - len(a) })
	return func(line string) string {
		line = string(s.maskSecrets([]byte(line)))
		for _, v := range literal {
			line = strings.ReplaceAll(line, v, "***")
		}
		return line
	}
}

// minMaskedValue is the shortest env value masked in stderr: masking "1" or "no" would garble
// every line and hide nothing.
const minMaskedValue = 4

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
		return "", fmt.Errorf("%w: %s (not on the daemon's PATH, %s)", errCommandNotFound, s.cfg.Command, os.Getenv("PATH"))
	case errors.Is(err, fs.ErrPermission):
		return "", fmt.Errorf("command %q is not executable: %w", s.cfg.Command, fs.ErrPermission)
	case errors.Is(err, fs.ErrNotExist):
		return "", fmt.Errorf("%w: %s (no such file)", errCommandNotFound, s.cfg.Command)
	}
	return "", fmt.Errorf("command %q cannot be run", s.cfg.Command)
}

// errCommandNotFound is a stdio server whose command is nowhere to be found: retrying soon cannot
// help, so it is retried after ManagerOptions.MissingCommandRetry, or at once when a reload or an
// approval wakes it (the owner installed the program).
var errCommandNotFound = errors.New("command not found")

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
