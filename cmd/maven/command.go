package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"strings"

	"maven/internal/suggest"
)

// command is one of maven's subcommands.
type command struct {
	name     string
	synopsis string // what follows "maven NAME" in the usage
	summary  string // one line
	run      func(ctx context.Context, in *invocation, args []string) error
}

// commands returns every subcommand, in the order the usage lists them. (A function, not a
// variable: help looks commands up, and a variable would refer to itself through it.)
func commands() []command {
	return []command{
		{"serve", "[--config FILE] [--data DIR] [--listen ADDR] [--log-format text|json] [--log-level LEVEL]", "run the daemon", serve},
		{"status", "[--json] [--data DIR]", "the daemon's version, lock state, tools, servers that need you, config problems", cliStatus},
		{"reload", "[--json] [--data DIR]", "read the config again and apply it (as SIGHUP does); print what changed", cliReload},
		{"tools", "[--json] [--state STATE] [--data DIR]", "the act allowlist", cliTools},
		{"propose", "NAME [--json] [--data DIR] -- ARGV...", "propose a local command; it runs only once enabled on /tools", cliPropose},
		{"mcp-servers", "[--json] [--data DIR]", "MCP servers: state, trust, last error", cliMCPServers},
		{"secret", "set NAME | list [--json] [--data DIR]", "seal a secret read from stdin (while unlocked), or list the secrets and who uses them", cliSecret},
		{"lock", "[--json] [--data DIR]", "seal the secrets until the next unlock", cliLock},
		{"setup-link", "[--json] [--data DIR]", "a one-time link to register a passkey", cliSetupLink},
		{"voice-token", "--rotate [--data DIR]", "a new bearer token for POST /voice (shown once)", cliVoiceToken},
		{"metrics-token", "--rotate [--data DIR]", "a new bearer token for GET /metrics (shown once)", cliMetricsToken},
		{"client", "add NAME [--tools a,b] | list [--json] | revoke NAME [--data DIR]", "the clients agents connect through: a static token (shown once), the list, a revocation", cliClient},
		{"events", "[--json] [--since DURATION] [--limit N] [--outcome OUTCOME] [--tool NAME] [--data DIR]", "what voice and the owner did, newest last", cliEvents},
		{"approvals", "[--json] [--data DIR]", "the calls that wait for your approval on the phone, and the recent ones (read-only)", cliApprovals},
		{"backup", "FILE [--data DIR]", "a consistent copy of the database, made while the daemon runs", cliBackup},
		{"restore", "FILE [--data DIR]", "put a backup in place of the database, while no daemon runs on it", cliRestore},
		{"version", "[--json] [--data DIR]", "this binary's version and commit, and the daemon's", cliVersion},
		{"help", "[COMMAND]", "this text, or a command's flags", cliHelp},
	}
}

func findCommand(name string) *command {
	for _, c := range commands() {
		if c.name == name {
			return &c
		}
	}
	return nil
}

// usageText is the usage of every command.
func usageText() string {
	var b strings.Builder
	b.WriteString("maven — a voice assistant's hands, limited to what its owner approved.\n\nUsage:\n")
	for _, c := range commands() {
		fmt.Fprintf(&b, "  maven %-14s %s\n", c.name, c.summary)
	}
	b.WriteString("\nFlags may come before or after the arguments; 'maven COMMAND --help' lists a command's.\n" +
		"Client commands talk to the running daemon over DATA/maven.sock. DATA is --data, else\n" +
		"$MAVEN_DATA, else $STATE_DIRECTORY (systemd), else $XDG_STATE_HOME/maven, else\n" +
		"~/.local/state/maven. Exit status: 0 done, 1 failed, 2 a mistake on the command line.\n")
	return b.String()
}

// invocation is the process's environment as one command sees it.
type invocation struct {
	getenv         func(string) string
	stdin          io.Reader
	stdout, stderr io.Writer
}

// errHelpShown is returned once a command's --help has been printed: nothing failed.
var errHelpShown = errors.New("help shown")

// usageError is a mistake in the command line itself; it exits with status 2.
type usageError struct{ msg string }

func (e usageError) Error() string { return e.msg }

// usagef builds a usageError that points at the command's help.
func usagef(name, format string, args ...any) error {
	return usageError{fmt.Sprintf(format, args...) + fmt.Sprintf(" (see 'maven %s --help')", name)}
}

// parseFlags parses args with fs, flags anywhere among the arguments, and returns the
// positional arguments and the index among them of the first one after "--" (-1 without one):
// after "--" nothing is a flag. -h and --help print the command's help to stdout and return
// errHelpShown; any other mistake is a usageError.
func (in *invocation) parseFlags(fs *flag.FlagSet, args []string) (positional []string, dashdash int, err error) {
	fs.SetOutput(io.Discard)
	fs.Usage = func() {}
	dashdash = -1
	for {
		err := fs.Parse(args)
		if errors.Is(err, flag.ErrHelp) {
			in.printHelp(fs)
			return nil, -1, errHelpShown
		}
		if err != nil {
			return nil, -1, usagef(fs.Name(), "%v", err)
		}
		rest := fs.Args()
		if consumed := len(args) - len(rest); consumed > 0 && args[consumed-1] == "--" && !takesValue(fs, args[:consumed-1]) {
			return append(positional, rest...), len(positional), nil
		}
		if len(rest) == 0 {
			return positional, dashdash, nil
		}
		positional = append(positional, rest[0])
		args = rest[1:]
	}
}

// takesValue reports whether the last of args is a flag of fs that takes the next argument as
// its value ("--data --" names a directory called "--").
func takesValue(fs *flag.FlagSet, args []string) bool {
	if len(args) == 0 {
		return false
	}
	name, ok := strings.CutPrefix(args[len(args)-1], "-")
	name = strings.TrimPrefix(name, "-")
	if !ok || name == "" || strings.Contains(name, "=") {
		return false
	}
	f := fs.Lookup(name)
	if f == nil {
		return false
	}
	b, isBool := f.Value.(interface{ IsBoolFlag() bool })
	return !isBool || !b.IsBoolFlag()
}

// printHelp prints the command's synopsis, summary and flags to stdout.
func (in *invocation) printHelp(fs *flag.FlagSet) {
	name := fs.Name()
	c := findCommand(strings.Fields(name)[0])
	if c == nil {
		return
	}
	fmt.Fprintf(in.stdout, "Usage: maven %s %s\n\n%s.\n", c.name, c.synopsis, strings.ToUpper(c.summary[:1])+c.summary[1:])
	var flags strings.Builder
	fs.SetOutput(&flags)
	fs.PrintDefaults()
	fs.SetOutput(io.Discard)
	if flags.Len() > 0 {
		fmt.Fprintf(in.stdout, "\nFlags:\n%s", flags.String())
	}
}

// dispatch runs the command args[0] names.
func dispatch(ctx context.Context, in *invocation, args []string) error {
	if len(args) == 0 {
		fmt.Fprint(in.stderr, usageText())
		return usageError{"no command given"}
	}
	name, rest := args[0], args[1:]
	switch name {
	case "-h", "--help":
		name = "help"
	case "--version", "-v":
		name = "version"
	}
	if c := findCommand(name); c != nil {
		return c.run(ctx, in, rest)
	}
	msg := fmt.Sprintf("unknown command %q", name)
	if s := suggest.Closest(name, commandNames()); s != "" {
		msg += fmt.Sprintf("; did you mean %s?", s)
	}
	return usageError{msg + " (see 'maven help')"}
}

// cliHelp is `maven help [COMMAND]`.
func cliHelp(_ context.Context, in *invocation, args []string) error {
	fs := flag.NewFlagSet("help", flag.ContinueOnError)
	rest, _, err := in.parseFlags(fs, args)
	if err != nil {
		return err
	}
	switch {
	case len(rest) == 0:
		fmt.Fprint(in.stdout, usageText())
		return nil
	case len(rest) > 1 || findCommand(rest[0]) == nil || rest[0] == "help":
		return usagef("help", "no command named %q", strings.Join(rest, " "))
	}
	return findCommand(rest[0]).run(context.Background(), in, []string{"--help"})
}

// exitCode is the process's exit status for run's error: 0 done (help included), 2 a mistake
// on the command line, 1 anything else.
func exitCode(err error) int {
	var ue usageError
	switch {
	case err == nil || errors.Is(err, errHelpShown):
		return 0
	case errors.As(err, &ue):
		return 2
	}
	return 1
}

// commandNames lists the commands' names.
func commandNames() []string {
	var out []string
	for _, c := range commands() {
		out = append(out, c.name)
	}
	return out
}
