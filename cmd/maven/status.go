package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"time"

	"maven/app/allowlist"
	"maven/app/approval"
	"maven/app/config"
	"maven/app/mcp"
)

// statusResult is the `status` IPC result. Fields are only ever added: scripts read it.
type statusResult struct {
	Version   string         `json:"version"`
	Commit    string         `json:"commit"`   // the VCS revision the daemon was built from, "" if unknown
	Modified  bool           `json:"modified"` // built from a working tree with uncommitted changes
	Go        string         `json:"go"`
	DataDir   string         `json:"data_dir"` // absolute
	Locked    bool           `json:"locked"`
	Listen    string         `json:"listen"`
	StartedAt time.Time      `json:"started_at"`
	Tools     map[string]int `json:"tools"` // rows by state
	// ConfigProblems are what the running config holds that the daemon runs despite, errors
	// first.
	ConfigProblems []config.Problem `json:"config_problems"`
	// ConfigRefused is the config the last reload refused, with when and why; null when the
	// last reload applied its config, or there was none.
	ConfigRefused *config.Refusal `json:"config_refused"`
	// AwaitingApproval are the stdio servers whose command line waits for the owner's approval
	// on /tools, by name.
	AwaitingApproval []awaitingServer `json:"awaiting_approval"`
	// NeedsAuth names the servers that want the owner to sign in to them (state needs-auth).
	NeedsAuth []string `json:"needs_auth"`
	// FailedServers are the servers in trouble (mcp.State.Trouble: they failed, or wait to
	// retry after a failure), with why.
	FailedServers []failedServer `json:"failed_servers"`
}

// awaitingServer is a stdio server held back until the owner approves its command line.
type awaitingServer struct {
	Server string `json:"server"`
	// Command is the command line as /tools shows it for approval (its environment and working
	// directory on lines of their own); "" until the server has recorded it.
	Command string `json:"command"`
}

// failedServer is a server that cannot be used now, and why.
type failedServer struct {
	Name   string    `json:"name"`
	State  string    `json:"state"` // a state in trouble: mcp.StateFailed or mcp.StateBackoff
	Reason string    `json:"reason"`
	Since  time.Time `json:"since"`
}

func (d *daemon) ipcStatus(ctx context.Context, _ json.RawMessage) (any, error) {
	byState, err := d.tools.CountByState(ctx, allowlist.Filter{})
	if err != nil {
		return nil, err
	}
	counts := map[string]int{}
	for _, s := range allowlist.States() {
		counts[string(s)] = byState[s]
	}
	pending, err := d.commands.Pending(ctx)
	if err != nil {
		return nil, err
	}
	b := readBuildInfo()
	st := statusResult{Version: b.Version, Commit: b.Commit, Modified: b.Modified, Go: b.Go, DataDir: d.dataDir,
		Locked: d.Locked(), Listen: d.listen, StartedAt: d.started.UTC(), Tools: counts, ConfigProblems: d.problems.List()}
	if r, ok := d.problems.Refused(); ok {
		st.ConfigRefused = &r
	}
	st.AwaitingApproval, st.NeedsAuth, st.FailedServers = serversNeedingAttention(d.mcp.Status(), pending)
	return st, nil
}

// serversNeedingAttention sorts out of statuses the servers that wait for the owner (to approve
// a command line, with the one pending; to sign in) and those that failed. Each list is in the
// order of statuses, and empty rather than nil.
func serversNeedingAttention(statuses []mcp.ServerStatus, pending []approval.PendingCommand) ([]awaitingServer, []string, []failedServer) {
	awaiting, needsAuth, failed := []awaitingServer{}, []string{}, []failedServer{}
	command := map[string]string{}
	for _, p := range pending {
		command[p.Server] = p.Display // oldest first: a server's newest pending line wins
	}
	for _, s := range statuses {
		switch {
		case s.State == mcp.StateAwaitingApproval:
			awaiting = append(awaiting, awaitingServer{Server: s.Name, Command: command[s.Name]})
		case s.State == mcp.StateNeedsAuth:
			needsAuth = append(needsAuth, s.Name)
		case s.State.Trouble():
			failed = append(failed, failedServer{Name: s.Name, State: string(s.State), Reason: s.LastError, Since: s.Since.UTC()})
		}
	}
	return awaiting, needsAuth, failed
}

func cliStatus(ctx context.Context, in *invocation, args []string) error {
	f, rest, _, err := in.parseClient("status", args, true)
	if err != nil {
		return err
	}
	if len(rest) > 0 {
		return usagef("status", "status takes no arguments")
	}
	var st statusResult
	if err := f.call(ctx, "status", nil, &st); err != nil {
		return err
	}
	if f.json {
		return writeJSON(in.stdout, st)
	}
	printStatus(in.stdout, st)
	return nil
}

// printStatus prints the status as lines for a person: what is fine in two lines, then each
// thing that needs the owner.
func printStatus(w io.Writer, st statusResult) {
	lock := "unlocked"
	if st.Locked {
		lock = "locked"
	}
	fmt.Fprintf(w, "maven %s, %s, listening on %s, up since %s, data in %s\n", st.Version, lock, st.Listen,
		st.StartedAt.Local().Format(time.DateTime), oneLine(st.DataDir))
	fmt.Fprintf(w, "tools: %d enabled, %d proposed, %d disabled, %d withdrawn\n",
		st.Tools["enabled"], st.Tools["proposed"], st.Tools["disabled"], st.Tools["withdrawn"])
	for _, a := range st.AwaitingApproval {
		line, _, _ := strings.Cut(a.Command, "\n")
		if line == "" {
			line = "(not recorded yet)"
		}
		fmt.Fprintf(w, "%s on /tools: %s: %s\n", mcp.StateAwaitingApproval.Words(), oneLine(a.Server), oneLine(line))
	}
	if len(st.NeedsAuth) > 0 {
		fmt.Fprintf(w, "%s on /tools: %s\n", mcp.StateNeedsAuth.Words(), oneLine(strings.Join(st.NeedsAuth, ", ")))
	}
	for _, s := range st.FailedServers {
		fmt.Fprintf(w, "server %s %s: %s\n", oneLine(s.Name), mcp.State(s.State).Words(), oneLine(s.Reason))
	}
	for _, p := range st.ConfigProblems {
		fmt.Fprintf(w, "config %s: %s\n", p.Level, problemLine(p))
	}
	if r := st.ConfigRefused; r != nil {
		fmt.Fprintf(w, "config refused at %s: the reload of %s found %d %s, and the running config stays:\n",
			r.At.Local().Format(time.DateTime), oneLine(r.File), len(r.Errors), plural(len(r.Errors), "error", "errors"))
		for _, p := range r.Errors {
			fmt.Fprintf(w, "  %s\n", problemLine(p))
		}
	}
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}
