// Command maven is the Maven daemon and its command-line client.
package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"runtime"
	"syscall"
)

// version is the release this binary was built from; the commit comes from the build info.
const version = "0.1.0-dev"

func main() {
	// Nothing reads this process's heap profile (the daemon is not dumpable and serves no
	// pprof): sampling allocations for it costs time, and its buckets 1.4 MiB once a daemon has
	// discovered 100 servers.
	runtime.MemProfileRate = 0
	if err := clobberFreed(os.Args[1:], os.Getenv); err != nil {
		fmt.Fprintln(os.Stderr, "maven:", err)
		os.Exit(1)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := run(ctx, os.Args[1:], os.Getenv, os.Stdin, os.Stdout, os.Stderr)
	stop()
	if code := exitCode(err); code != 0 {
		fmt.Fprintln(os.Stderr, "maven:", err)
		os.Exit(code)
	}
}

// run is the whole program; main only supplies the process's environment.
func run(ctx context.Context, args []string, getenv func(string) string, stdin io.Reader, stdout, stderr io.Writer) error {
	return dispatch(ctx, &invocation{getenv: getenv, stdin: stdin, stdout: stdout, stderr: stderr}, args)
}

// envOr returns the environment variable key, or def when it is unset or empty.
func envOr(getenv func(string) string, key, def string) string {
	if v := getenv(key); v != "" {
		return v
	}
	return def
}
