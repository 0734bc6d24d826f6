package mcp

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"maven/app/allowlist"
)

// ToolReconciler turns complete tool lists into allowlist rows (docs/design.md#rule-6 to
// docs/design.md#rule-11). Discovery only ever proposes; every state change goes through
// allowlist.Tx, one transaction per refresh. How fast one server may change its tools is bounded by
// a ChurnBudget.
type ToolReconciler struct {
	allowlist *allowlist.Service
	now       func() time.Time
	logger    *slog.Logger
	budget    ChurnBudget

	mu      sync.Mutex
	refused map[string][]Refusal
	// last remembers a digest of each server's list (its names and fingerprints) from its last
	// reconcile, so an unchanged list is recognised without opening a write transaction: 32
	// bytes a server, where the fingerprints themselves were 10,000 strings of 71 bytes for 100
	// servers × 100 tools.
	last  map[string]listDigest
	churn map[string]churnState

	onReconcile func(server string, took time.Duration)
}

// NewToolReconciler returns a reconciler writing through svc, with the default ChurnBudget.
func NewToolReconciler(svc *allowlist.Service, now func() time.Time, logger *slog.Logger) *ToolReconciler {
	return &ToolReconciler{allowlist: svc, now: now, logger: logger, budget: ChurnBudget{}.withDefaults(),
		refused: map[string][]Refusal{}, last: map[string]listDigest{}, churn: map[string]churnState{}}
}

// OnReconcile sets a function told how long each reconcile of a server took (metrics). Call it
// before the manager runs.
func (r *ToolReconciler) OnReconcile(fn func(server string, took time.Duration)) {
	r.onReconcile = fn
}

// Refused returns what the last refresh of server refused.
func (r *ToolReconciler) Refused(server string) []Refusal {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.refused[server])
}

// Forget drops the fingerprints the reconciler remembers of server, so its next list is
// compared with the database again (after the owner changed rows, say). The churn budget is
// not forgotten.
func (r *ToolReconciler) Forget(server string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	delete(r.last, server)
}

// Reconcile applies one complete tools/list of a connected server. The caller guarantees
// completeness: only such a list may withdraw anything (rule 10). A list that would take the
// server over its churn budget, and every list during the cooldown that follows, is refused
// with a *ChurnError (matching ErrTooManyChanges) and changes nothing.
func (r *ToolReconciler) Reconcile(ctx context.Context, server string, tools []*sdk.Tool) error {
	if r.onReconcile != nil {
		start := time.Now()
		defer func() { r.onReconcile(server, time.Since(start)) }()
	}
	now := r.now()
	r.mu.Lock()
	churn := r.churn[server]
	r.mu.Unlock()
	if err := churn.cooling(now); err != nil {
		return err
	}
	listed, refused := sanitize(tools)
	r.mu.Lock()
	r.refused[server] = refused
	digest := digestOf(listed)
	last, seen := r.last[server]
	unchanged := seen && last == digest
	r.mu.Unlock()
	for _, f := range refused {
		r.logger.Warn("refused a tool", "server", server, "tool", fmt.Sprintf("%.80q", f.Tool), "reason", f.Reason)
	}
	if unchanged {
		// Nothing the server says differs from what we stored last time: write nothing.
		return nil
	}

	var trip *ChurnError
	err := r.allowlist.Update(ctx, func(tx *allowlist.Tx) error {
		rows, err := tx.List(ctx, allowlist.Filter{Scope: allowlist.MCPScope(server)})
		if err != nil {
			return err
		}
		c := planChanges(server, rows, listed, refused, now)
		churn, trip = r.budget.charge(churn, server, now, c)
		if trip != nil {
			return trip
		}
		return r.apply(ctx, tx, c, churn.start)
	})
	if trip != nil {
		r.mu.Lock()
		r.churn[server] = churn
		r.mu.Unlock()
		return trip
	}
	if err != nil {
		return fmt.Errorf("reconcile %s: %w", server, err)
	}
	r.mu.Lock()
	r.last[server] = digest
	r.churn[server] = churn
	r.mu.Unlock()
	return nil
}

// changes is what one complete list changes, worked out before anything is written.
type changes struct {
	server    string
	at        string // the refresh's time, as provenance quotes it
	withdraw  []withdrawal
	propose   []proposal
	reappear  []change // withdrawn rows listed again
	adopt     []change // rows that predate fingerprints
	redeclare []change // rows whose declared shape changed
	active    int      // rows not withdrawn before the list
	firstList bool     // the server had no rows at all
}

type withdrawal struct {
	row    allowlist.Tool
	reason string
}

type proposal struct {
	lt       listedTool
	renameOf string // a tool that vanished in the same list with the same input schema
}

type change struct {
	row allowlist.Tool
	lt  listedTool
}

// counted is how many changes the churn budget counts: the first list of a server is free.
func (c *changes) counted() int {
	n := len(c.withdraw) + len(c.reappear) + len(c.redeclare)
	if !c.firstList {
		n += len(c.propose)
	}
	return n
}

// changedTools names the existing tools that changed: withdrawn, back, or redefined.
func (c *changes) changedTools() []string {
	names := make([]string, 0, len(c.withdraw)+len(c.reappear)+len(c.redeclare))
	for _, w := range c.withdraw {
		names = append(names, w.row.RemoteName())
	}
	for _, ch := range slices.Concat(c.reappear, c.redeclare) {
		names = append(names, ch.row.RemoteName())
	}
	return names
}

// planChanges compares a server's rows with its complete list (rules 8–10).
func planChanges(server string, rows []allowlist.Tool, listed map[string]listedTool, refused []Refusal, now time.Time) *changes {
	c := &changes{server: server, at: now.UTC().Format(time.RFC3339), firstList: len(rows) == 0}
	refusedReason := make(map[string]string, len(refused))
	for _, f := range refused {
		refusedReason[f.Tool] = f.Reason
	}
	byTool := make(map[string]allowlist.Tool, len(rows))
	// A tool that appears in the same list in which another vanished, with the same input
	// schema, may be a rename.
	vanishedBySchema := map[string]string{}
	for _, row := range rows {
		byTool[row.RemoteName()] = row
		if row.State == allowlist.StateWithdrawn {
			continue
		}
		c.active++
		if _, ok := listed[row.RemoteName()]; ok {
			continue
		}
		reason := fmt.Sprintf("withdrawn: %s no longer lists it (%s)", server, c.at)
		if why, ok := refusedReason[row.RemoteName()]; ok {
			reason = fmt.Sprintf("withdrawn: Maven refused what %s now lists: %s (%s)", server, why, c.at)
		}
		c.withdraw = append(c.withdraw, withdrawal{row, reason})
		if d, err := ParseDeclared(row.Declared); err == nil {
			if key, err := canonicalSchema(d.InputSchema); err == nil {
				vanishedBySchema[string(key)] = row.RemoteName()
			}
		}
	}
	for _, name := range slices.Sorted(maps.Keys(listed)) {
		lt := listed[name]
		row, exists := byTool[name]
		switch {
		case !exists:
			c.propose = append(c.propose, proposal{lt, vanishedBySchema[lt.schemaKey()]})
		case row.State == allowlist.StateWithdrawn:
			c.reappear = append(c.reappear, change{row, lt})
		case row.Fingerprint == "":
			c.adopt = append(c.adopt, change{row, lt})
		case row.Fingerprint != lt.Fingerprint:
			c.redeclare = append(c.redeclare, change{row, lt})
		}
	}
	return c
}

// apply writes c in tx. Redefinitions recorded since coalesceSince may absorb the ones that
// follow them (see ChurnBudget).
func (r *ToolReconciler) apply(ctx context.Context, tx *allowlist.Tx, c *changes, coalesceSince time.Time) error {
	for _, w := range c.withdraw {
		if _, err := tx.Withdraw(ctx, w.row.ID, "discovery", w.reason); err != nil {
			return err
		}
	}
	if err := r.proposeAll(ctx, tx, c); err != nil {
		return err
	}
	for _, ch := range c.reappear {
		if err := r.reappear(ctx, tx, c, ch); err != nil {
			return err
		}
	}
	for _, ch := range c.adopt {
		if _, err := tx.AdoptFingerprint(ctx, ch.row.ID, ch.lt.Fingerprint, ch.lt.Canonical); err != nil {
			return err
		}
	}
	for _, ch := range c.redeclare {
		if err := r.redeclare(ctx, tx, c, ch, coalesceSince); err != nil {
			return err
		}
	}
	return nil
}

// proposeAll proposes the tools the server never listed before, all in a few statements: their
// names are checked against the allowlist in one query, and they are inserted together.
func (r *ToolReconciler) proposeAll(ctx context.Context, tx *allowlist.Tx, c *changes) error {
	if len(c.propose) == 0 {
		return nil
	}
	first := make([]string, len(c.propose))
	for i, p := range c.propose {
		first[i] = LocalName(c.server, p.lt.Declared.Name, nil)
	}
	held, err := tx.TakenNames(ctx, first)
	if err != nil {
		return err
	}
	known := make(map[string]bool, len(first))
	for _, name := range first {
		known[name] = held[name]
	}
	taken := func(name string) bool {
		if t, ok := known[name]; ok {
			return t
		}
		// A suffixed name after a collision: rare enough to ask for on its own.
		held, err := tx.TakenNames(ctx, []string{name})
		return err == nil && held[name]
	}
	ps := make([]allowlist.Proposal, len(c.propose))
	for i, p := range c.propose {
		name := LocalName(c.server, p.lt.Declared.Name, taken)
		known[name] = true // two tools of one list may flatten alike
		provenance := fmt.Sprintf("discovered on %s (%s)", c.server, c.at)
		if p.renameOf != "" {
			provenance = fmt.Sprintf("discovered on %s (%s); possibly a rename of %q, which vanished in the same refresh with the same input schema: a new proposal, not trusted as that tool", c.server, c.at, p.renameOf)
		}
		ps[i] = proposalOf(c.server, p.lt, name, p.renameOf, provenance)
	}
	_, err = tx.ProposeNew(ctx, ps)
	return err
}

func proposalOf(server string, lt listedTool, name, renameOf, provenance string) allowlist.Proposal {
	d := lt.Declared
	return allowlist.Proposal{
		Name: name, Cmd: []string{"mcp", server, d.Name}, Scope: allowlist.MCPScope(server),
		Destructive: !d.ReadOnlyHint, ReadOnly: d.ReadOnlyHint, Description: d.Description,
		InputSchema: d.InputSchema, Fingerprint: lt.Fingerprint, Declared: lt.Canonical,
		RenameOf: renameOf, Source: allowlist.SourceDiscovery, Provenance: provenance, Actor: "discovery",
	}
}

// reappear brings a withdrawn tool back as a proposal, saying whether it came back unchanged.
func (r *ToolReconciler) reappear(ctx context.Context, tx *allowlist.Tx, c *changes, ch change) error {
	var provenance string
	if ch.row.Fingerprint == ch.lt.Fingerprint {
		provenance = fmt.Sprintf("returned unchanged on %s (%s)", c.server, c.at)
		if ch.row.EnabledAt != nil {
			provenance += "; it had been enabled before it was withdrawn"
		}
	} else {
		changed := changedSince(ch.row, ch.lt.Declared)
		provenance = fmt.Sprintf("returned changed on %s (%s): %s changed", c.server, c.at, strings.Join(changed, ", "))
	}
	_, _, err := tx.Propose(ctx, proposalOf(c.server, ch.lt, ch.row.Name, "", provenance))
	return err
}

func (r *ToolReconciler) redeclare(ctx context.Context, tx *allowlist.Tx, c *changes, ch change, coalesceSince time.Time) error {
	// The diff shown to the owner is against what they approved, if they approved anything.
	base := ch.row
	if ch.row.State == allowlist.StateProposed && ch.row.PreviousDeclared != "" {
		base.Declared = ch.row.PreviousDeclared
	}
	changed := changedSince(base, ch.lt.Declared)
	d := ch.lt.Declared
	_, err := tx.Redeclare(ctx, ch.row.ID, allowlist.Redeclaration{
		Fingerprint: ch.lt.Fingerprint, Declared: ch.lt.Canonical, Description: d.Description,
		InputSchema: d.InputSchema, ReadOnly: d.ReadOnlyHint, ChangedFields: changed,
		Provenance:    fmt.Sprintf("redefined by %s (%s): %s changed", c.server, c.at, strings.Join(changed, ", ")),
		CoalesceSince: coalesceSince,
	})
	return err
}

// changedSince names the fields of cur that differ from the row's stored shape.
func changedSince(row allowlist.Tool, cur Declared) []string {
	old, err := ParseDeclared(row.Declared)
	if err != nil {
		// Every field may have changed, but the one the row was found by.
		var all []string
		for _, f := range DeclaredFields() {
			if !f.identifies {
				all = append(all, f.Key)
			}
		}
		return all
	}
	changed, err := ChangedFields(old, cur)
	if err != nil || len(changed) == 0 {
		return []string{"shape"}
	}
	return changed
}

// listDigest is the SHA-256 of a list's names and fingerprints, in the names' order: two lists
// have the same digest when they hold the same tools with the same shapes (docs/design.md#rule-7).
type listDigest [sha256.Size]byte

func digestOf(listed map[string]listedTool) listDigest {
	type entry struct{ name, fingerprint string }
	entries := make([]entry, 0, len(listed))
	size := 0
	for name, lt := range listed {
		entries = append(entries, entry{name, lt.Fingerprint})
		size += len(name) + len(lt.Fingerprint) + 2*binary.MaxVarintLen64
	}
	slices.SortFunc(entries, func(a, b entry) int { return strings.Compare(a.name, b.name) })
	// Each string is its length, then itself: no two lists write the same bytes.
	b := make([]byte, 0, size)
	for _, e := range entries {
		b = binary.AppendUvarint(b, uint64(len(e.name)))
		b = append(b, e.name...)
		b = binary.AppendUvarint(b, uint64(len(e.fingerprint)))
		b = append(b, e.fingerprint...)
	}
	return sha256.Sum256(b)
}
