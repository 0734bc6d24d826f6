package allowlist

import (
	"context"
	"errors"
	"fmt"
	"slices"
)

// removedFromConfig is the provenance of a row withdrawn because the config no longer names it.
const removedFromConfig = "removed from config"

// LocalTool is a local command as the config names it.
type LocalTool struct {
	Name string
	Argv []string
}

// Refused is a config tool SyncConfigTools could not propose.
type Refused struct {
	Index int    // its place in the list SyncConfigTools was given
	Name  string // its name
	Err   error  // why; it wraps ErrInvalid
}

// SyncConfigTools proposes the config's local commands and withdraws the config-sourced rows the
// config no longer names, all in one transaction. A tool that cannot be proposed (its name
// belongs to another row: an MCP tool's, perhaps one withdrawn long ago) is refused without
// holding back the others, so one bad entry never stops the daemon; the row it was before, if
// any, is left as it is.
func (s *Service) SyncConfigTools(ctx context.Context, tools []LocalTool) ([]Refused, error) {
	var refused []Refused
	err := s.Update(ctx, func(tx *Tx) error {
		refused = nil
		kept := make(map[int64]bool, len(tools))
		for i, lt := range tools {
			t, _, err := tx.Propose(ctx, Proposal{
				Name: lt.Name, Cmd: lt.Argv, Scope: ScopeLocal,
				Source: SourceConfig, Provenance: "proposed from the config file", Actor: "config",
			})
			if errors.Is(err, ErrInvalid) {
				// Refused before anything was written, so the transaction goes on.
				refused = append(refused, Refused{Index: i, Name: lt.Name, Err: err})
				if old, err := tx.st.FindByCmd(ctx, ScopeLocal, lt.Argv); err == nil {
					kept[old.ID] = true
				}
				continue
			}
			if err != nil {
				return fmt.Errorf("config tool %q: %w", lt.Name, err)
			}
			kept[t.ID] = true
		}
		rows, err := tx.st.ListTools(ctx, Filter{Scope: ScopeLocal, Source: SourceConfig})
		if err != nil {
			return err
		}
		for _, r := range rows {
			if kept[r.ID] || r.State == StateWithdrawn {
				continue
			}
			if _, err := tx.Withdraw(ctx, r.ID, "config", removedFromConfig); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return refused, nil
}

// WithdrawRemovedServers withdraws, in one transaction, every row of an MCP server that is not in
// servers (the configured ones) and is not withdrawn yet, saying "removed from config", and returns
// the servers whose rows it withdrew, sorted. Removing a server from the config is the owner's own
// act, unlike a server that is down, which withdraws nothing (docs/design.md#rule-10); a server
// that comes back proposes its tools again, as a withdrawn tool that reappears does.
func (s *Service) WithdrawRemovedServers(ctx context.Context, servers []string) ([]string, error) {
	configured := make(map[string]bool, len(servers))
	for _, name := range servers {
		configured[name] = true
	}
	var withdrawn []string
	err := s.Update(ctx, func(tx *Tx) error {
		withdrawn = nil
		rows, err := tx.st.ListTools(ctx, Filter{States: []State{StateProposed, StateEnabled, StateDisabled}})
		if err != nil {
			return err
		}
		for _, r := range rows {
			server := r.Server()
			if !r.IsMCP() || configured[server] {
				continue
			}
			if _, err := tx.Withdraw(ctx, r.ID, "config", removedFromConfig); err != nil {
				return err
			}
			if !slices.Contains(withdrawn, server) {
				withdrawn = append(withdrawn, server)
			}
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("withdraw the rows of removed servers: %w", err)
	}
	slices.Sort(withdrawn)
	return withdrawn, nil
}
