package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"maven/app/allowlist"
	"maven/app/clients"
	"maven/app/ipc"
	"maven/app/reveal"
)

// clientResult is one client of the `clients` IPC result (docs/design.md#ipc): never a token
// or a secret, nor their hashes.
type clientResult struct {
	ID    string `json:"id"`
	Name  string `json:"name"`
	Kind  string `json:"kind"`  // static, registered, metadata
	State string `json:"state"` // pending, approved, revoked
	// AllTools: every enabled tool, now and later; else only Tools.
	AllTools     bool         `json:"all_tools"`
	Tools        []toolOfUser `json:"tools"`
	RedirectURIs []string     `json:"redirect_uris"`
	CreatedAt    time.Time    `json:"created_at"`
	ApprovedAt   *time.Time   `json:"approved_at"`
	LastSeen     *time.Time   `json:"last_seen"`
	Calls        int64        `json:"calls"`
}

// toolOfUser is a row a client may use, by id and its name now ("" for a row that is gone).
type toolOfUser struct {
	ID   int64  `json:"id"`
	Name string `json:"name"`
}

func optionalTime(t time.Time) *time.Time {
	if t.IsZero() {
		return nil
	}
	u := t.UTC()
	return &u
}

// clientResultOf is c as the IPC methods show it, its tools named from names.
func clientResultOf(c clients.Client, names map[int64]string) clientResult {
	r := clientResult{ID: c.ID, Name: c.Name, Kind: string(c.Kind), State: string(c.State), AllTools: c.AllTools,
		Tools: []toolOfUser{}, RedirectURIs: c.RedirectURIs, CreatedAt: c.CreatedAt.UTC(),
		ApprovedAt: optionalTime(c.ApprovedAt), LastSeen: optionalTime(c.LastSeen), Calls: c.Calls}
	if r.RedirectURIs == nil {
		r.RedirectURIs = []string{}
	}
	for _, id := range c.ToolIDs {
		r.Tools = append(r.Tools, toolOfUser{ID: id, Name: names[id]})
	}
	return r
}

// toolNames maps every row's id to its name.
func (d *daemon) toolNames(ctx context.Context) (map[int64]string, error) {
	rows, err := d.tools.List(ctx, allowlist.Filter{})
	if err != nil {
		return nil, err
	}
	names := make(map[int64]string, len(rows))
	for _, t := range rows {
		names[t.ID] = t.Name
	}
	return names, nil
}

// ipcClients is the read-only `clients` method.
func (d *daemon) ipcClients(ctx context.Context, params json.RawMessage) (any, error) {
	if err := ipc.DecodeParams(params, &struct{}{}); err != nil {
		return nil, err
	}
	list, err := d.clients.List(ctx)
	if err != nil {
		return nil, err
	}
	names, err := d.toolNames(ctx)
	if err != nil {
		return nil, err
	}
	out := make([]clientResult, len(list))
	for i, c := range list {
		out[i] = clientResultOf(c, names)
	}
	return out, nil
}

// clientAddParams are the `client_add` params: the client's name, and the tools its agents may
// use by name (none: every enabled tool, now and later).
type clientAddParams struct {
	Name  string   `json:"name"`
	Tools []string `json:"tools,omitempty"`
}

// clientAddResult is the `client_add` result: the only time the token is shown.
type clientAddResult struct {
	Client clientResult `json:"client"`
	Token  string       `json:"token"`
}

// ipcClientAdd issues a static token (docs/design.md#rule-29). Whoever reaches the socket acts
// as the daemon's user, the owner: this approves a client, never a call.
func (d *daemon) ipcClientAdd(ctx context.Context, params json.RawMessage) (any, error) {
	var p clientAddParams
	if err := ipc.DecodeParams(params, &p); err != nil {
		return nil, err
	}
	names, err := d.toolNames(ctx)
	if err != nil {
		return nil, err
	}
	choice := clients.Choice{All: len(p.Tools) == 0}
	for _, want := range p.Tools {
		id, ok := idOfName(names, want)
		if !ok {
			return nil, &ipc.Error{Code: ipc.InvalidParams, Message: fmt.Sprintf("no tool is named %q (see maven tools)", want)}
		}
		choice.ToolIDs, choice.Names = append(choice.ToolIDs, id), append(choice.Names, want)
	}
	token, c, err := d.clients.AddStatic(ctx, p.Name, choice)
	switch {
	case errors.Is(err, clients.ErrInvalid), errors.Is(err, clients.ErrExists):
		return nil, &ipc.Error{Code: ipc.InvalidParams, Message: err.Error()}
	case err != nil:
		return nil, err
	}
	return clientAddResult{Client: clientResultOf(c, names), Token: token}, nil
}

func idOfName(names map[int64]string, name string) (int64, bool) {
	for id, n := range names {
		if n == name {
			return id, true
		}
	}
	return 0, false
}

// clientRevokeParams name the client to revoke: its id, or a name only one client has.
type clientRevokeParams struct {
	Client string `json:"client"`
}

// ipcClientRevoke revokes a client: its tokens stop working, its agents' sessions end.
func (d *daemon) ipcClientRevoke(ctx context.Context, params json.RawMessage) (any, error) {
	var p clientRevokeParams
	if err := ipc.DecodeParams(params, &p); err != nil {
		return nil, err
	}
	c, err := d.clients.Find(ctx, p.Client)
	if err == nil && c.State != clients.StateApproved {
		err = fmt.Errorf("%w: %s is %s", clients.ErrNotFound, c.ID, c.State.Words())
	}
	if err == nil {
		err = d.clients.Revoke(ctx, c.ID, "cli")
	}
	switch {
	case errors.Is(err, clients.ErrNotFound), errors.Is(err, clients.ErrAmbiguous):
		return nil, &ipc.Error{Code: ipc.InvalidParams, Message: err.Error()}
	case err != nil:
		return nil, err
	}
	c.State = clients.StateRevoked
	return map[string]any{"client": clientResultOf(c, nil)}, nil
}

// cliClient is `maven client add NAME [--tools a,b] | list [--json] | revoke NAME`.
func cliClient(ctx context.Context, in *invocation, args []string) error {
	fs, f := in.newClientFlags("client", true)
	tools := fs.String("tools", "", "client add: the only tools its agents may use, by name, comma-separated (default: every enabled tool, now and later)")
	rest, _, err := in.parseFlags(fs, args)
	if err != nil {
		return err
	}
	if f.dataDir, err = absDataDir(f.dataDir); err != nil {
		return err
	}
	switch {
	case len(rest) == 2 && rest[0] == "add":
		return cliClientAdd(ctx, in, *f, rest[1], *tools)
	case *tools != "":
		return usagef("client", "--tools goes with client add")
	case len(rest) == 1 && rest[0] == "list":
		return cliClientList(ctx, in, *f)
	case len(rest) == 2 && rest[0] == "revoke":
		var res struct {
			Client clientResult `json:"client"`
		}
		if err := f.call(ctx, "client_revoke", clientRevokeParams{Client: rest[1]}, &res); err != nil {
			return err
		}
		if f.json {
			return writeJSON(in.stdout, res)
		}
		fmt.Fprintf(in.stdout, "client %s (%s) is revoked: its tokens no longer work\n", reveal.OneLine(res.Client.Name), reveal.OneLine(res.Client.ID))
		return nil
	}
	return usagef("client", "usage: maven client add NAME [--tools a,b] | maven client list | maven client revoke NAME")
}

// cliClientAdd is `maven client add NAME`: the token goes to stdout, alone, this once.
func cliClientAdd(ctx context.Context, in *invocation, f clientFlags, name, tools string) error {
	p := clientAddParams{Name: name}
	for _, t := range strings.Split(tools, ",") {
		if t = strings.TrimSpace(t); t != "" {
			p.Tools = append(p.Tools, t)
		}
	}
	var res clientAddResult
	if err := f.call(ctx, "client_add", p, &res); err != nil {
		return err
	}
	if f.json {
		return writeJSON(in.stdout, res)
	}
	fmt.Fprintln(in.stdout, res.Token)
	fmt.Fprintf(in.stderr, "This is the only time the token is shown. The client %s sends it as 'Authorization: Bearer TOKEN' to /mcp; it sees %s.\n",
		reveal.OneLine(res.Client.Name), toolsWords(res.Client))
	return nil
}

// cliClientList is `maven client list`.
func cliClientList(ctx context.Context, in *invocation, f clientFlags) error {
	var list []clientResult
	if err := f.call(ctx, "clients", nil, &list); err != nil {
		return err
	}
	if f.json {
		return writeJSON(in.stdout, list)
	}
	if len(list) == 0 {
		fmt.Fprintln(in.stdout, "no client yet: 'maven client add NAME' issues a token, and agents that sign in with OAuth appear here")
		return nil
	}
	tw := tabwriter.NewWriter(in.stdout, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "NAME\tKIND\tSTATE\tTOOLS\tLAST SEEN\tCALLS\tID")
	for _, c := range list {
		seen := "never"
		if c.LastSeen != nil {
			seen = c.LastSeen.Local().Format("2006-01-02 15:04")
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\n", reveal.OneLine(c.Name), clients.Kind(c.Kind).Words(),
			clients.State(c.State).Words(), reveal.OneLine(toolsWords(c)), seen, strconv.FormatInt(c.Calls, 10), reveal.OneLine(c.ID))
	}
	return tw.Flush()
}

// toolsWords says which tools a client sees.
func toolsWords(c clientResult) string {
	if c.AllTools {
		return "every enabled tool, now and later"
	}
	names := make([]string, len(c.Tools))
	for i, t := range c.Tools {
		names[i] = t.Name
	}
	if len(names) == 0 {
		return "no tool"
	}
	return strings.Join(names, ", ")
}
