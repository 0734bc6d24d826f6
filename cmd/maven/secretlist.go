package main

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"text/tabwriter"

	"maven/app/ipc"
	"maven/app/reveal"
)

// secretListResult is the `secret_list` IPC result: every secret that is sealed or that the
// config refers to, by name.
type secretListResult struct {
	// Locked says the vault is locked, so which secrets are sealed is not known.
	Locked  bool             `json:"locked"`
	Secrets []secretListItem `json:"secrets"`
}

// secretListItem is one secret; never its value.
type secretListItem struct {
	Name string `json:"name"`
	// Sealed says whether the vault holds it; null while locked.
	Sealed *bool `json:"sealed"`
	// Servers are the configured servers that refer to it, sorted; a sealed secret none refers
	// to has none.
	Servers []string `json:"servers"`
}

// ipcSecretList is the read-only `secret_list` method: names only, never a value.
func (d *daemon) ipcSecretList(ctx context.Context, params json.RawMessage) (any, error) {
	if err := ipc.DecodeParams(params, &struct{}{}); err != nil {
		return nil, err
	}
	locked, uses, err := d.vault.Inventory(ctx, d.reload.secretUsers())
	if err != nil {
		return nil, err
	}
	res := secretListResult{Locked: locked, Secrets: make([]secretListItem, 0, len(uses))}
	for _, u := range uses {
		res.Secrets = append(res.Secrets, secretListItem{Name: u.Name, Sealed: u.Sealed, Servers: u.Servers})
	}
	return res, nil
}

// cliSecretList is `maven secret list`.
func cliSecretList(ctx context.Context, in *invocation, f clientFlags) error {
	var res secretListResult
	if err := f.call(ctx, "secret_list", nil, &res); err != nil {
		return err
	}
	if f.json {
		return writeJSON(in.stdout, res)
	}
	if len(res.Secrets) == 0 {
		fmt.Fprintln(in.stdout, "no secrets are sealed and the config refers to none")
		return nil
	}
	tw := tabwriter.NewWriter(in.stdout, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "NAME\tSEALED\tUSED BY")
	var missing []string
	for _, s := range res.Secrets {
		state := "?"
		if s.Sealed != nil && *s.Sealed {
			state = "yes"
		} else if s.Sealed != nil {
			state = "no"
			missing = append(missing, s.Name)
		}
		used := strings.Join(s.Servers, ", ")
		if used == "" {
			used = "-"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\n", reveal.OneLine(s.Name), state, reveal.OneLine(used))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	switch {
	case res.Locked:
		fmt.Fprintln(in.stdout, "\nMaven is locked: unlock it at /unlock to see which are sealed.")
	case len(missing) > 0:
		fmt.Fprintf(in.stdout, "\nMissing: %s. Set each with 'maven secret set NAME' (the value on standard input).\n", reveal.OneLine(strings.Join(missing, ", ")))
	}
	return nil
}
