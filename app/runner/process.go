package runner

import (
	"errors"
	"maps"
	"os"
	"os/exec"
	"slices"
	"syscall"
)

// InOwnProcessGroup starts cmd in a process group of its own and makes cancelling it (its
// context ending) kill the whole group with SIGKILL, so that whatever the command spawned dies
// with it, and a Ctrl-C meant for the daemon does not reach it. Call it before cmd.Start. Both
// local commands and stdio MCP servers start this way.
func InOwnProcessGroup(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error {
		err := syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		if errors.Is(err, syscall.ESRCH) {
			return os.ErrProcessDone
		}
		return err
	}
}

// Environ is a child's whole environment: the daemon's PATH, HOME and LANG (as getenv reads
// them), then extra, as sorted NAME=value pairs. Nothing else of the daemon's environment, where
// secrets may live, reaches the child. It is never nil, because a nil Cmd.Env inherits all.
func Environ(getenv func(string) string, extra map[string]string) []string {
	vars := map[string]string{}
	for _, k := range []string{"PATH", "HOME", "LANG"} {
		if v := getenv(k); v != "" {
			vars[k] = v
		}
	}
	maps.Copy(vars, extra)
	env := make([]string, 0, len(vars))
	for _, k := range slices.Sorted(maps.Keys(vars)) {
		env = append(env, k+"="+vars[k])
	}
	return env
}
