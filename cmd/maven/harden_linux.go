package main

import (
	"fmt"
	"os"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"
)

// forbidMemoryReads makes the daemon non-dumpable (docs/design.md#rule-22): no core dump is
// written, and no process without CAP_SYS_PTRACE, not even one of the same user, may ptrace the
// daemon or open its /proc/PID/mem, where the unlocked data key and secrets live. The children it
// starts (stdio MCP servers) are dumpable again after their exec, as usual.
func forbidMemoryReads() error {
	if err := unix.Prctl(unix.PR_SET_DUMPABLE, 0, 0, 0, 0); err != nil {
		return fmt.Errorf("make the process non-dumpable: %w", err)
	}
	return nil
}

// clobberFreed runs `maven serve` again in place, with GODEBUG=clobberfree=1, unless GODEBUG
// already says what to do with it. Go does not clear the memory it frees, so every copy of a
// secret the standard library makes out of Maven's reach (net/http's write buffers, os/exec's
// environment block, encoding/json's temporaries) would stay readable after a lock; with
// clobberfree the garbage collector overwrites each object it frees. The cost is the sweeper
// writing over freed memory, small for a daemon this quiet. It returns only if the exec failed.
func clobberFreed(args []string, getenv func(string) string) error {
	godebug := getenv("GODEBUG")
	if len(args) == 0 || args[0] != "serve" || strings.Contains(godebug, "clobberfree=") {
		return nil
	}
	exe, err := os.Executable()
	if err != nil {
		return fmt.Errorf("find this binary to run it with GODEBUG=clobberfree=1: %w", err)
	}
	if godebug != "" {
		godebug += ","
	}
	env := append(os.Environ(), "GODEBUG="+godebug+"clobberfree=1")
	return syscall.Exec(exe, append([]string{os.Args[0]}, args...), env)
}
