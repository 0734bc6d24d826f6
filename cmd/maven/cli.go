package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"path/filepath"
	"text/tabwriter"
	"time"

	"maven/app/ipc"
	"maven/app/reveal"
)

// clientFlags are the flags every client command takes.
type clientFlags struct {
	dataDir string
	json    bool
}

func parseClientFlags(name string, args []string, getenv func(string) string, stderr io.Writer, withJSON bool) (clientFlags, []string, error) {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(stderr)
	var f clientFlags
	fs.StringVar(&f.dataDir, "data", envOr(getenv, "MAVEN_DATA", "data"), "data directory of the running daemon (env MAVEN_DATA)")
	if withJSON {
		fs.BoolVar(&f.json, "json", false, "print JSON, the stable contract for scripts")
	}
	if err := fs.Parse(args); err != nil {
		return f, nil, err
	}
	return f, fs.Args(), nil
}

func (f clientFlags) call(ctx context.Context, method string, params, result any) error {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	return ipc.Call(ctx, filepath.Join(f.dataDir, "maven.sock"), method, params, result)
}

func writeJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

func cliStatus(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	f, rest, err := parseClientFlags("status", args, getenv, stderr, true)
	if err != nil {
		return err
	}
	if len(rest) > 0 {
		return usageError{"status takes no arguments"}
	}
	var st statusResult
	if err := f.call(ctx, "status", nil, &st); err != nil {
		return err
	}
	if f.json {
		return writeJSON(stdout, st)
	}
	lock := "unlocked"
	if st.Locked {
		lock = "locked"
	}
	fmt.Fprintf(stdout, "maven %s, %s, listening on %s, up since %s\n", st.Version, lock, st.Listen, st.StartedAt.Local().Format(time.DateTime))
	fmt.Fprintf(stdout, "tools: %d enabled, %d proposed, %d disabled, %d withdrawn\n",
		st.Tools["enabled"], st.Tools["proposed"], st.Tools["disabled"], st.Tools["withdrawn"])
	return nil
}

func cliTools(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	f, rest, err := parseClientFlags("tools", args, getenv, stderr, true)
	if err != nil {
		return err
	}
	if len(rest) > 0 {
		return usageError{"tools takes no arguments"}
	}
	var rows []toolResult
	if err := f.call(ctx, "tools", nil, &rows); err != nil {
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

func cliPropose(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	f, rest, err := parseClientFlags("propose", args, getenv, stderr, true)
	if err != nil {
		return err
	}
	if len(rest) < 3 || rest[1] != "--" {
		return usageError{"usage: maven propose NAME -- ARGV..."}
	}
	var row toolResult
	if err := f.call(ctx, "propose_tool", proposeParams{Name: rest[0], Argv: rest[2:]}, &row); err != nil {
		return err
	}
	if f.json {
		return writeJSON(stdout, row)
	}
	fmt.Fprintf(stdout, "tool %d %q is %s; enable it on the /tools page\n", row.ID, reveal.OneLine(row.Name), row.State)
	return nil
}

func cliSetupLink(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	f, rest, err := parseClientFlags("setup-link", args, getenv, stderr, true)
	if err != nil {
		return err
	}
	if len(rest) > 0 {
		return usageError{"setup-link takes no arguments"}
	}
	var link setupLinkResult
	if err := f.call(ctx, "setup_link", nil, &link); err != nil {
		return err
	}
	if f.json {
		return writeJSON(stdout, link)
	}
	fmt.Fprintf(stdout, "Open this link to register a passkey. It works once, until %s:\n\n  %s\n",
		link.ExpiresAt.Local().Format(time.Kitchen), link.URL)
	return nil
}

func cliVersion(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	f, _, err := parseClientFlags("version", args, getenv, stderr, false)
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "maven %s\n", version)
	var st statusResult
	switch err := f.call(ctx, "status", nil, &st); {
	case err == nil:
		fmt.Fprintf(stdout, "daemon %s\n", st.Version)
	case errors.Is(err, ipc.ErrNotRunning):
		fmt.Fprintln(stdout, "daemon not running")
	default:
		return err
	}
	return nil
}

func cliVoiceToken(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	return rotateToken(ctx, "voice", args, getenv, stdout, stderr,
		"Send it as 'Authorization: Bearer TOKEN' (or as the HTTP Basic password) to POST /voice.")
}

func cliMetricsToken(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	return rotateToken(ctx, "metrics", args, getenv, stdout, stderr,
		"Scrape GET /metrics with 'Authorization: Bearer TOKEN'; the endpoint exists only with \"metrics\": true in the config.")
}

// rotateToken is `maven voice-token --rotate` and `maven metrics-token --rotate`.
func rotateToken(ctx context.Context, name string, args []string, getenv func(string) string, stdout, stderr io.Writer, how string) error {
	fs := flag.NewFlagSet(name+"-token", flag.ContinueOnError)
	fs.SetOutput(stderr)
	dataDir := fs.String("data", envOr(getenv, "MAVEN_DATA", "data"), "data directory of the running daemon (env MAVEN_DATA)")
	rotate := fs.Bool("rotate", false, "issue a new token; the old one stops working at once")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if !*rotate || fs.NArg() > 0 {
		return usageError{"usage: maven " + name + "-token --rotate (tokens are stored hashed and cannot be shown again)"}
	}
	var res tokenResult
	if err := (clientFlags{dataDir: *dataDir}).call(ctx, name+"_token_rotate", nil, &res); err != nil {
		return err
	}
	fmt.Fprintln(stdout, res.Token)
	fmt.Fprintln(stderr, "This is the only time the token is shown. "+how)
	return nil
}
