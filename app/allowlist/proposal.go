package allowlist

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Proposal is a tool offered for the owner's approval.
type Proposal struct {
	Name        string
	Cmd         []string
	Scope       string
	Destructive bool
	ReadOnly    bool
	Description string
	InputSchema json.RawMessage
	Fingerprint string
	Declared    string
	RenameOf    string
	Source      string
	Provenance  string
	Actor       string
}

// sameRow reports whether saving t over old would change nothing.
func sameRow(t, old Tool) bool {
	return t.Name == old.Name && t.State == old.State && t.Destructive == old.Destructive &&
		t.ReadOnly == old.ReadOnly && t.Description == old.Description &&
		string(t.InputSchema) == string(old.InputSchema) && t.Fingerprint == old.Fingerprint &&
		t.Declared == old.Declared && t.RenameOf == old.RenameOf && t.Provenance == old.Provenance
}

const maxNameLen = 64

func validateProposal(p Proposal) error {
	switch {
	case p.Name == "":
		return fmt.Errorf("%w: a tool needs a name", ErrInvalid)
	case len(p.Name) > maxNameLen:
		return fmt.Errorf("%w: name %q is longer than %d bytes", ErrInvalid, p.Name, maxNameLen)
	case !validName(p.Name):
		return fmt.Errorf("%w: name %q may only hold letters, digits, '_' and '-'", ErrInvalid, p.Name)
	case len(p.Cmd) == 0 || p.Cmd[0] == "":
		return fmt.Errorf("%w: tool %q has an empty command", ErrInvalid, p.Name)
	case p.Scope == "":
		return fmt.Errorf("%w: tool %q has no scope", ErrInvalid, p.Name)
	}
	isMCPCmd := p.Cmd[0] == "mcp"
	if p.Scope == ScopeLocal && isMCPCmd {
		return fmt.Errorf("%w: a local command cannot start with \"mcp\"", ErrInvalid)
	}
	if p.Scope != ScopeLocal {
		if !isMCPCmd || len(p.Cmd) != 3 || MCPScope(p.Cmd[1]) != p.Scope {
			return fmt.Errorf("%w: scope %q needs cmd [\"mcp\", server, tool] of that server", ErrInvalid, p.Scope)
		}
	}
	for _, a := range p.Cmd {
		if !utf8.ValidString(a) || strings.ContainsRune(a, 0) {
			return fmt.Errorf("%w: tool %q has an argument that is not valid text", ErrInvalid, p.Name)
		}
	}
	return nil
}

func validName(name string) bool {
	for _, r := range name {
		if r != '_' && r != '-' && !unicode.IsLetter(r) && !unicode.IsDigit(r) {
			return false
		}
	}
	return true
}

func schemaOrEmpty(s json.RawMessage) json.RawMessage {
	if len(s) == 0 {
		return json.RawMessage(`{}`)
	}
	return slices.Clone(s)
}

// Propose creates a proposed row, or returns the row that already has this identity (scope, cmd:
// docs/design.md#rule-1). Proposing is idempotent: an existing proposed row is updated in place, a
// withdrawn one comes back as proposed, and an enabled or disabled one keeps its state (only its
// spoken name may change for a local command, and not while it is enabled: ErrInvalid). A name
// that belongs to another row is refused (ErrInvalid). destructive is only ever raised.
func (tx *Tx) Propose(ctx context.Context, p Proposal) (Tool, bool, error) {
	if err := validateProposal(p); err != nil {
		return Tool{}, false, err
	}
	if p.Scope == ScopeLocal {
		// A local command makes no promise not to write, so it is always destructive.
		p.Destructive, p.ReadOnly = true, false
	}
	existing, err := tx.st.FindByCmd(ctx, p.Scope, p.Cmd)
	if errors.Is(err, ErrNotFound) {
		if err := tx.checkNameFree(ctx, p.Name, 0); err != nil {
			return Tool{}, false, err
		}
		rows, err := tx.insertProposed(ctx, []Proposal{p})
		if err != nil {
			return Tool{}, false, err
		}
		return rows[0], true, nil
	}
	if err != nil {
		return Tool{}, false, fmt.Errorf("find tool %q: %w", p.Name, err)
	}

	t := existing
	switch t.State {
	case StateProposed, StateWithdrawn:
		t.State = StateProposed
		t.Destructive = t.Destructive || p.Destructive
		t.ReadOnly = p.ReadOnly
		t.Description, t.InputSchema = p.Description, schemaOrEmpty(p.InputSchema)
		t.Fingerprint, t.Declared, t.RenameOf = p.Fingerprint, p.Declared, p.RenameOf
		t.Provenance = p.Provenance
	}
	if t.Scope == ScopeLocal && p.Name != t.Name {
		if t.State == StateEnabled {
			// The owner's step-up approved this command under its name, which is what voice
			// answers to (docs/design.md#rule-2): renaming it is for the owner to approve too.
			return Tool{}, false, fmt.Errorf("%w: this command is already tool %d %q, enabled under that name; a proposal cannot rename an enabled tool. "+
				"Disable it on /tools, propose it again as %q, and enable it under the new name", ErrInvalid, t.ID, t.Name, p.Name)
		}
		t.Name = p.Name
	}
	if t.Name != existing.Name {
		if err := tx.checkNameFree(ctx, t.Name, t.ID); err != nil {
			return Tool{}, false, err
		}
	}
	if sameRow(t, existing) {
		return existing, false, nil
	}
	action := "updated"
	if existing.State == StateWithdrawn {
		action = "reproposed"
	}
	return t, false, tx.save(ctx, &t, existing, p.Actor, action, map[string]any{
		"provenance": p.Provenance, "rename_of": p.RenameOf,
	})
}

// ProposeNew proposes tools that have no row yet, as Propose does, but in a few statements for
// all of them instead of several each: a server's first listing may hold thousands. It fails,
// and the transaction with it, if a proposal is invalid, or if a row already has its identity
// (scope, cmd) or its name (ErrInvalid): the caller knows the rows are new.
func (tx *Tx) ProposeNew(ctx context.Context, ps []Proposal) ([]Tool, error) {
	for i := range ps {
		if err := validateProposal(ps[i]); err != nil {
			return nil, err
		}
		if ps[i].Scope == ScopeLocal {
			ps[i].Destructive, ps[i].ReadOnly = true, false
		}
	}
	return tx.insertProposed(ctx, ps)
}

// insertProposed stores each proposal as a new proposed row, with its event.
func (tx *Tx) insertProposed(ctx context.Context, ps []Proposal) ([]Tool, error) {
	rows := make([]Tool, len(ps))
	ptrs := make([]*Tool, len(ps))
	for i, p := range ps {
		rows[i] = Tool{
			Name: p.Name, Cmd: slices.Clone(p.Cmd), Scope: p.Scope, State: StateProposed,
			Destructive: p.Destructive, ReadOnly: p.ReadOnly, Description: p.Description,
			InputSchema: schemaOrEmpty(p.InputSchema), Fingerprint: p.Fingerprint, Declared: p.Declared,
			RenameOf: p.RenameOf, Source: p.Source, Provenance: p.Provenance,
			CreatedAt: tx.now, UpdatedAt: tx.now,
		}
		ptrs[i] = &rows[i]
	}
	if err := tx.st.InsertTools(ctx, ptrs); err != nil {
		if len(ps) == 1 {
			return nil, fmt.Errorf("insert tool %q: %w", ps[0].Name, err)
		}
		return nil, fmt.Errorf("insert %d tools: %w", len(ps), err)
	}
	for _, r := range ptrs {
		tx.written = append(tx.written, r.ID)
	}
	events := make([]Event, len(ps))
	for i, p := range ps {
		e, err := newEvent(tx.now, rows[i].ID, p.Actor, "proposed", map[string]any{
			"state": StateProposed, "destructive": rows[i].Destructive, "provenance": p.Provenance,
			"rename_of": p.RenameOf,
		})
		if err != nil {
			return nil, err
		}
		events[i] = e
	}
	if err := tx.st.AppendEvents(ctx, events); err != nil {
		return nil, fmt.Errorf("append proposed events: %w", err)
	}
	return rows, nil
}
