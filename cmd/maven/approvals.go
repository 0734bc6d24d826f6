package main

import (
	"context"
	"encoding/json"
	"fmt"
	"text/tabwriter"
	"time"

	"maven/app/ipc"
	"maven/app/pending"
	"maven/app/reveal"
)

// approvalResult is one element of the `approvals` IPC result (docs/design.md#ipc): a pending
// call and what became of it, never its result's content.
type approvalResult struct {
	ID        int64           `json:"id"`
	State     string          `json:"state"`
	Client    string          `json:"client"`
	Tool      string          `json:"tool"`
	Server    string          `json:"server"`
	Args      json.RawMessage `json:"args"`
	Absent    []string        `json:"absent"`
	Created   time.Time       `json:"created"`
	Expires   time.Time       `json:"expires"`
	Reason    string          `json:"reason"`
	DecidedBy string          `json:"decided_by"`
	IsError   bool            `json:"is_error"`
	// Delivered is whether a notifier told the owner; null while that is not known.
	Delivered *bool  `json:"delivered"`
	URL       string `json:"url"`
}

// ipcApprovals is the read-only `approvals` method: the calls that wait for the owner, oldest
// first, then the recent ones, latest first. Nothing on the command line or IPC approves a
// call: that is a passkey step-up on its page (docs/design.md#rule-31).
func (d *daemon) ipcApprovals(ctx context.Context, params json.RawMessage) (any, error) {
	if err := ipc.DecodeParams(params, &struct{}{}); err != nil {
		return nil, err
	}
	l, err := d.pending.List(ctx)
	if err != nil {
		return nil, err
	}
	out := make([]approvalResult, 0, len(l.Open)+len(l.Recent))
	for _, c := range append(l.Open, l.Recent...) {
		r := approvalResult{ID: c.ID, State: string(c.State), Client: c.Client.Name, Tool: c.Tool, Server: c.Server(),
			Args: c.Args, Absent: c.Absent, Created: c.Created, Expires: c.Expires, Reason: c.Reason, DecidedBy: c.DecidedBy,
			URL: d.pending.Link(c.ID)}
		if r.Absent == nil {
			r.Absent = []string{}
		}
		if c.Result != nil {
			r.IsError = c.Result.IsError
		}
		if c.Deliveries != nil {
			delivered := c.Delivered()
			r.Delivered = &delivered
		}
		out = append(out, r)
	}
	return out, nil
}

// cliApprovals is `maven approvals [--json]`: the pending calls, read-only.
func cliApprovals(ctx context.Context, in *invocation, args []string) error {
	fs, f := in.newClientFlags("approvals", true)
	rest, _, err := in.parseFlags(fs, args)
	if err != nil {
		return err
	}
	if f.dataDir, err = absDataDir(f.dataDir); err != nil {
		return err
	}
	if len(rest) > 0 {
		return usagef("approvals", "approvals takes no arguments")
	}
	var calls []approvalResult
	if err := f.call(ctx, "approvals", nil, &calls); err != nil {
		return err
	}
	if f.json {
		return writeJSON(in.stdout, calls)
	}
	if len(calls) == 0 {
		fmt.Fprintln(in.stdout, "No call waits for approval, and none was decided lately.")
		return nil
	}
	tw := tabwriter.NewWriter(in.stdout, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "ID\tSTATE\tCLIENT\tTOOL\tARGUMENTS\tEXPIRES\tAPPROVE AT")
	for _, c := range calls {
		args, _ := reveal.Cut(reveal.OneLine(string(c.Args)), 60, "…")
		where := "-"
		if c.State == string(pending.StatePending) {
			where = c.URL
		}
		fmt.Fprintf(tw, "%d\t%s\t%s\t%s\t%s\t%s\t%s\n", c.ID, c.State, reveal.OneLine(c.Client), reveal.OneLine(c.Tool), args,
			c.Expires.Local().Format(time.DateTime), where)
	}
	return tw.Flush()
}
