// Command maven is the Maven daemon and its command-line client.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
)

// version is the release this binary was built from.
const version = "0.1.0-dev"

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := run(ctx, os.Args[1:], os.Getenv, os.Stdin, os.Stdout, os.Stderr)
	stop()
	if err != nil {
		if !errors.Is(err, flag.ErrHelp) {
			fmt.Fprintln(os.Stderr, "maven:", err)
		}
		var ue usageError
		if errors.As(err, &ue) || errors.Is(err, flag.ErrHelp) {
			os.Exit(2)
		}
		os.Exit(1)
	}
}

// usageError is a mistake in the command line itself.
type usageError struct{ msg string }

func (e usageError) Error() string { return e.msg + " (see 'maven help')" }

const usage = `maven — a voice assistant's hands, limited to what its owner approved.

Usage:
  maven serve [--config FILE] [--data DIR] [--listen ADDR]   run the daemon
  maven status [--json]                                      daemon status
  maven tools [--json]                                       the act allowlist
  maven propose NAME -- ARGV...                              propose a local command
  maven mcp-servers [--json]                                 MCP servers: state, trust, last error
  maven voice-token --rotate                                 a new bearer token for POST /voice
  maven metrics-token --rotate                               a new bearer token for GET /metrics
  maven setup-link [--json]                                  a one-time link to register a passkey
  maven lock [--json]                                        seal the secrets until the next unlock
  maven events [--json] [--since DURATION] [--limit N]       what voice and the owner did, newest last
  maven secret set NAME                                      seal a secret read from stdin (while unlocked)
  maven version                                              this binary's and the daemon's version

Client commands talk to the running daemon over DATA/maven.sock and take --data DIR
(default ./data, or MAVEN_DATA).
`

// run is the whole program; main only supplies the process's environment.
func run(ctx context.Context, args []string, getenv func(string) string, stdin io.Reader, stdout, stderr io.Writer) error {
	if len(args) == 0 {
		fmt.Fprint(stderr, usage)
		return usageError{"no command given"}
	}
	cmd, rest := args[0], args[1:]
	switch cmd {
	case "serve":
		return serve(ctx, rest, getenv, stderr)
	case "status":
		return cliStatus(ctx, rest, getenv, stdout, stderr)
	case "tools":
		return cliTools(ctx, rest, getenv, stdout, stderr)
	case "propose":
		return cliPropose(ctx, rest, getenv, stdout, stderr)
	case "mcp-servers":
		return cliMCPServers(ctx, rest, getenv, stdout, stderr)
	case "voice-token":
		return cliVoiceToken(ctx, rest, getenv, stdout, stderr)
	case "metrics-token":
		return cliMetricsToken(ctx, rest, getenv, stdout, stderr)
	case "setup-link":
		return cliSetupLink(ctx, rest, getenv, stdout, stderr)
	case "lock":
		return cliLock(ctx, rest, getenv, stdout, stderr)
	case "events":
		return cliEvents(ctx, rest, getenv, stdout, stderr)
	case "secret":
		return cliSecret(ctx, rest, getenv, stdin, stdout, stderr)
	case "version", "--version":
		return cliVersion(ctx, rest, getenv, stdout, stderr)
	case "help", "-h", "--help":
		fmt.Fprint(stdout, usage)
		return nil
	}
	fmt.Fprint(stderr, usage)
	return usageError{fmt.Sprintf("unknown command %q", cmd)}
}

// envOr returns the environment variable key, or def when it is unset or empty.
func envOr(getenv func(string) string, key, def string) string {
	if v := getenv(key); v != "" {
		return v
	}
	return def
}
