package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"path/filepath"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"maven/app/allowlist"
	"maven/app/ipc"
	"maven/app/reveal"
)

// clientFlags are the flags every client command takes.
type clientFlags struct {
	dataDir string
	json    bool
}

// newClientFlags declares --data, and --json when withJSON, on a new flag set for name.
func (in *invocation) newClientFlags(name string, withJSON bool) (*flag.FlagSet, *clientFlags) {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	f := &clientFlags{}
	fs.StringVar(&f.dataDir, "data", defaultDataDir(in.getenv), "data directory of the running daemon (env MAVEN_DATA)")
	if withJSON {
		fs.BoolVar(&f.json, "json", false, "print JSON, the stable contract for scripts")
	}
	return fs, f
}

// parseClient parses a client command's flags and returns them with its positional arguments
// and the index of the first one after "--" (-1 without one).
func (in *invocation) parseClient(name string, args []string, withJSON bool) (clientFlags, []string, int, error) {
	fs, f := in.newClientFlags(name, withJSON)
	rest, dashdash, err := in.parseFlags(fs, args)
	if err != nil {
		return clientFlags{}, nil, -1, err
	}
	if f.dataDir, err = absDataDir(f.dataDir); err != nil {
		return clientFlags{}, nil, -1, err
	}
	return *f, rest, dashdash, nil
}

// call calls method on the daemon that keeps its data in f.dataDir. When none answers there,
// the error says where it looked and how to look elsewhere.
func (f clientFlags) call(ctx context.Context, method string, params, result any) error {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	sock := filepath.Join(f.dataDir, "maven.sock")
	err := ipc.Call(ctx, sock, method, params, result)
	var refused *ipc.Error
	switch {
	case errors.Is(err, ipc.ErrNotRunning):
		return fmt.Errorf("%w with data directory %s (no socket at %s): start one with 'maven serve', or pass --data DIR (or set MAVEN_DATA) if yours keeps its data elsewhere",
			ipc.ErrNotRunning, f.dataDir, sock)
	case errors.As(err, &refused):
		return daemonError{refused}
	}
	return err
}

// daemonError is the daemon's refusal as a person reads it: its message alone, without the
// JSON-RPC code (which scripts still find with errors.As).
type daemonError struct{ refused *ipc.Error }

func (e daemonError) Error() string { return e.refused.Message }
func (e daemonError) Unwrap() error { return e.refused }

func writeJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

func cliTools(ctx context.Context, in *invocation, args []string) error {
	fs, f := in.newClientFlags("tools", true)
	state := fs.String("state", "", "only rows in this state: "+strings.Join(stateNames(), ", "))
	rest, _, err := in.parseFlags(fs, args)
	if err != nil {
		return err
	}
	if f.dataDir, err = absDataDir(f.dataDir); err != nil {
		return err
	}
	switch {
	case len(rest) > 0:
		return usagef("tools", "tools takes no arguments")
	case *state != "" && !slices.Contains(stateNames(), *state):
		return usagef("tools", "--state is one of %s, not %q%s", strings.Join(stateNames(), ", "), *state, didYouMean(*state, stateNames()))
	}
	stdout := in.stdout
	var rows []toolResult
	if err := f.call(ctx, "tools", toolsParams{State: *state}, &rows); err != nil {
		return err
	}
	if f.json {
		return writeJSON(stdout, rows)
	}
	tw := tabwriter.NewWriter(stdout, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "ID\tNAME\tSTATE\tDESTRUCTIVE\tSCOPE\tCOMMAND")
	for _, r := range rows {
		destructive := "no"
		if r.Destructive {
			destructive = "yes"
		}
		fmt.Fprintf(tw, "%d\t%s\t%s\t%s\t%s\t%s\n", r.ID, reveal.OneLine(r.Name), r.State, destructive,
			reveal.OneLine(r.Scope), reveal.OneLine(reveal.CommandLine(r.Cmd)))
	}
	return tw.Flush()
}

func cliPropose(ctx context.Context, in *invocation, args []string) error {
	f, rest, dashdash, err := in.parseClient("propose", args, true)
	if err != nil {
		return err
	}
	if dashdash != 1 || len(rest) < 2 {
		return usagef("propose", "usage: maven propose NAME -- ARGV... (the command line after --, run without a shell)")
	}
	stdout := in.stdout
	var row proposeResult
	if err := f.call(ctx, "propose_tool", proposeParams{Name: rest[0], Argv: rest[1:]}, &row); err != nil {
		return err
	}
	if f.json {
		return writeJSON(stdout, row)
	}
	fmt.Fprintf(stdout, "tool %d %q is %s; enable it on the /tools page\n", row.ID, reveal.OneLine(row.Name), row.State)
	for _, w := range row.Warnings {
		fmt.Fprintf(in.stderr, "warning: %s\n", reveal.OneLine(w))
	}
	return nil
}

func cliSetupLink(ctx context.Context, in *invocation, args []string) error {
	f, rest, _, err := in.parseClient("setup-link", args, true)
	if err != nil {
		return err
	}
	if len(rest) > 0 {
		return usagef("setup-link", "setup-link takes no arguments")
	}
	stdout := in.stdout
	var link setupLinkResult
	if err := f.call(ctx, "setup_link", nil, &link); err != nil {
		return err
	}
	if f.json {
		return writeJSON(stdout, link)
	}
	fmt.Fprintf(stdout, "Open this link to register a passkey. It works once, until %s:\n\n  %s\n",
		link.ExpiresAt.Local().Format("15:04"), link.URL)
	return nil
}

func cliVoiceToken(ctx context.Context, in *invocation, args []string) error {
	return rotateToken(ctx, in, "voice", args,
		"Send it as 'Authorization: Bearer TOKEN' (or as the HTTP Basic password) to POST /voice.")
}

func cliMetricsToken(ctx context.Context, in *invocation, args []string) error {
	return rotateToken(ctx, in, "metrics", args,
		"Scrape GET /metrics with 'Authorization: Bearer TOKEN'; the endpoint exists only with \"metrics\": true in the config.")
}

// rotateToken is `maven voice-token --rotate` and `maven metrics-token --rotate`.
func rotateToken(ctx context.Context, in *invocation, name string, args []string, how string) error {
	cmd := name + "-token"
	fs, f := in.newClientFlags(cmd, false)
	rotate := fs.Bool("rotate", false, "issue a new token; the old one stops working at once")
	rest, _, err := in.parseFlags(fs, args)
	if err != nil {
		return err
	}
	if !*rotate || len(rest) > 0 {
		return usagef(cmd, "usage: maven %s --rotate (tokens are stored hashed and cannot be shown again)", cmd)
	}
	if f.dataDir, err = absDataDir(f.dataDir); err != nil {
		return err
	}
	var res tokenResult
	if err := f.call(ctx, name+"_token_rotate", nil, &res); err != nil {
		return err
	}
	fmt.Fprintln(in.stdout, res.Token)
	fmt.Fprintln(in.stderr, "This is the only time the token is shown. "+how)
	return nil
}

// stateNames are the allowlist states, as --state names them.
func stateNames() []string {
	var out []string
	for _, st := range allowlist.States() {
		out = append(out, string(st))
	}
	return out
}
