package mcp

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"time"
	"unicode"
	"unicode/utf8"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"maven/app/allowlist"
)

// Limits on what a server may declare. A tool past them is refused, not cut: a shortened
// description would not be what the server tells the model.
const (
	maxToolNameBytes    = 1024
	maxDescriptionBytes = 64 << 10
	maxSchemaBytes      = 256 << 10
)

// Refusal is a listed tool Maven would not store, and why.
type Refusal struct {
	Tool   string // the name as listed, possibly hostile: escape it before display
	Reason string
}

// ToolReconciler turns complete tool lists into allowlist rows (DESIGN.md rules 6–11). Discovery
// only ever proposes; every state change goes through allowlist.Tx, one transaction per refresh.
type ToolReconciler struct {
	allowlist *allowlist.Service
	now       func() time.Time
	logger    *slog.Logger

	mu      sync.Mutex
	refused map[string][]Refusal
	// last remembers each server's fingerprints from its last reconcile, so an unchanged list
	// is recognised without opening a write transaction.
	last map[string]map[string]string

	onReconcile func(server string, took time.Duration)
}

// OnReconcile sets a function told how long each reconcile of a server took (metrics). Call it
// before the manager runs.
func (r *ToolReconciler) OnReconcile(fn func(server string, took time.Duration)) {
	r.onReconcile = fn
}

// NewToolReconciler returns a reconciler writing through svc.
func NewToolReconciler(svc *allowlist.Service, now func() time.Time, logger *slog.Logger) *ToolReconciler {
	return &ToolReconciler{allowlist: svc, now: now, logger: logger,
		refused: map[string][]Refusal{}, last: map[string]map[string]string{}}
}

// Refused returns what the last refresh of server refused.
func (r *ToolReconciler) Refused(server string) []Refusal {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.refused[server])
}

// listedTool is a tool from a list that passed the sanity checks, in canonical form.
type listedTool struct {
	Shape
}

// schemaKey is the canonical input schema, for rename detection.
func (lt listedTool) schemaKey() string { return string(lt.Declared.InputSchema) }

// Reconcile applies one complete tools/list of a connected server. The caller guarantees
// completeness: only such a list may withdraw anything (rule 10).
func (r *ToolReconciler) Reconcile(ctx context.Context, server string, tools []*sdk.Tool) error {
	if r.onReconcile != nil {
		start := time.Now()
		defer func() { r.onReconcile(server, time.Since(start)) }()
	}
	listed, refused := sanitize(tools)
	r.mu.Lock()
	r.refused[server] = refused
	unchanged := sameFingerprints(r.last[server], listed)
	r.mu.Unlock()
	for _, f := range refused {
		r.logger.Warn("refused a tool", "server", server, "tool", fmt.Sprintf("%.80q", f.Tool), "reason", f.Reason)
	}
	if unchanged {
		// Nothing the server says differs from what we stored last time: write nothing.
		return nil
	}

	at := r.now().UTC().Format(time.RFC3339)
	scope := allowlist.MCPScope(server)
	err := r.allowlist.Update(ctx, func(tx *allowlist.Tx) error {
		rows, err := tx.Store().ListTools(ctx, allowlist.Filter{Scope: scope})
		if err != nil {
			return err
		}
		byTool := make(map[string]allowlist.Tool, len(rows))
		for _, row := range rows {
			byTool[row.RemoteName()] = row
		}
		refusedReason := make(map[string]string, len(refused))
		for _, f := range refused {
			refusedReason[f.Tool] = f.Reason
		}

		// Vanished rows first, so that a tool appearing in the same refresh with the same input
		// schema can be flagged as a possible rename.
		vanishedBySchema := map[string]string{}
		for _, row := range rows {
			if _, ok := listed[row.RemoteName()]; ok || row.State == allowlist.StateWithdrawn {
				continue
			}
			reason := fmt.Sprintf("withdrawn: %s no longer lists it (%s)", server, at)
			if why, ok := refusedReason[row.RemoteName()]; ok {
				reason = fmt.Sprintf("withdrawn: Maven refused what %s now lists: %s (%s)", server, why, at)
			}
			if _, err := tx.Withdraw(ctx, row.ID, "discovery", reason); err != nil {
				return err
			}
			if d, err := ParseDeclared(row.Declared); err == nil {
				if key, err := canonicalSchema(d.InputSchema); err == nil {
					vanishedBySchema[string(key)] = row.RemoteName()
				}
			}
		}

		for _, name := range sortedKeys(listed) {
			lt := listed[name]
			row, exists := byTool[name]
			switch {
			case !exists:
				if err := r.propose(ctx, tx, server, lt, vanishedBySchema[lt.schemaKey()], at); err != nil {
					return err
				}
			case row.State == allowlist.StateWithdrawn:
				if err := r.reappear(ctx, tx, server, row, lt, at); err != nil {
					return err
				}
			case row.Fingerprint == "":
				if _, err := tx.AdoptFingerprint(ctx, row.ID, lt.Fingerprint, lt.Canonical); err != nil {
					return err
				}
			case row.Fingerprint != lt.Fingerprint:
				if err := r.redeclare(ctx, tx, server, row, lt, at); err != nil {
					return err
				}
			}
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("reconcile %s: %w", server, err)
	}
	fps := make(map[string]string, len(listed))
	for name, lt := range listed {
		fps[name] = lt.Fingerprint
	}
	r.mu.Lock()
	r.last[server] = fps
	r.mu.Unlock()
	return nil
}

// Forget drops what the reconciler remembers of server, so its next list is compared with the
// database again (after the owner changed rows, say).
func (r *ToolReconciler) Forget(server string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	delete(r.last, server)
}

func (r *ToolReconciler) propose(ctx context.Context, tx *allowlist.Tx, server string, lt listedTool, renameOf, at string) error {
	taken := func(name string) bool {
		_, err := tx.Store().FindByName(ctx, name)
		return err == nil
	}
	provenance := fmt.Sprintf("discovered on %s (%s)", server, at)
	if renameOf != "" {
		provenance = fmt.Sprintf("discovered on %s (%s); possibly a rename of %q, which vanished in the same refresh with the same input schema: a new proposal, not trusted as that tool", server, at, renameOf)
	}
	_, _, err := tx.Propose(ctx, r.proposal(server, lt, LocalName(server, lt.Declared.Name, taken), renameOf, provenance))
	return err
}

func (r *ToolReconciler) proposal(server string, lt listedTool, name, renameOf, provenance string) allowlist.Proposal {
	d := lt.Declared
	return allowlist.Proposal{
		Name: name, Cmd: []string{"mcp", server, d.Name}, Scope: allowlist.MCPScope(server),
		Destructive: !d.ReadOnlyHint, ReadOnly: d.ReadOnlyHint, Description: d.Description,
		InputSchema: d.InputSchema, Fingerprint: lt.Fingerprint, Declared: lt.Canonical,
		RenameOf: renameOf, Source: allowlist.SourceDiscovery, Provenance: provenance, Actor: "discovery",
	}
}

// reappear brings a withdrawn tool back as a proposal, saying whether it came back unchanged.
func (r *ToolReconciler) reappear(ctx context.Context, tx *allowlist.Tx, server string, row allowlist.Tool, lt listedTool, at string) error {
	var provenance string
	if row.Fingerprint == lt.Fingerprint {
		provenance = fmt.Sprintf("returned unchanged on %s (%s)", server, at)
		if row.EnabledAt != nil {
			provenance += "; it had been enabled before it was withdrawn"
		}
	} else {
		changed := changedSince(row, lt.Declared)
		provenance = fmt.Sprintf("returned changed on %s (%s): %s changed", server, at, strings.Join(changed, ", "))
	}
	_, _, err := tx.Propose(ctx, r.proposal(server, lt, row.Name, "", provenance))
	return err
}

func (r *ToolReconciler) redeclare(ctx context.Context, tx *allowlist.Tx, server string, row allowlist.Tool, lt listedTool, at string) error {
	// The diff shown to the owner is against what they approved, if they approved anything.
	base := row
	if row.State == allowlist.StateProposed && row.PreviousDeclared != "" {
		base.Declared = row.PreviousDeclared
	}
	changed := changedSince(base, lt.Declared)
	d := lt.Declared
	_, err := tx.Redeclare(ctx, row.ID, allowlist.Redeclaration{
		Fingerprint: lt.Fingerprint, Declared: lt.Canonical, Description: d.Description,
		InputSchema: d.InputSchema, ReadOnly: d.ReadOnlyHint, ChangedFields: changed,
		Provenance: fmt.Sprintf("redefined by %s (%s): %s changed", server, at, strings.Join(changed, ", ")),
	})
	return err
}

// changedSince names the fields of cur that differ from the row's stored shape.
func changedSince(row allowlist.Tool, cur Declared) []string {
	old, err := ParseDeclared(row.Declared)
	if err != nil {
		return []string{"description", "inputSchema", "readOnlyHint"}
	}
	changed, err := ChangedFields(old, cur)
	if err != nil || len(changed) == 0 {
		return []string{"shape"}
	}
	return changed
}

// sanitize keeps the tools Maven can store faithfully and says why it refused the others. A name
// listed twice is refused altogether: the server claims two shapes for one name, and Maven will
// not pick one.
func sanitize(tools []*sdk.Tool) (map[string]listedTool, []Refusal) {
	listed := make(map[string]listedTool, len(tools))
	var refused []Refusal
	count := map[string]int{}
	for _, t := range tools {
		if t != nil {
			count[t.Name]++
		}
	}
	seenDup := map[string]bool{}
	for _, t := range tools {
		if t == nil {
			continue
		}
		if count[t.Name] > 1 {
			if !seenDup[t.Name] {
				seenDup[t.Name] = true
				refused = append(refused, Refusal{Tool: t.Name, Reason: fmt.Sprintf("listed %d times in one list", count[t.Name])})
			}
			continue
		}
		lt, reason := check(t)
		if reason != "" {
			refused = append(refused, Refusal{Tool: t.Name, Reason: reason})
			continue
		}
		listed[t.Name] = lt
	}
	return listed, refused
}

func check(t *sdk.Tool) (listedTool, string) {
	switch {
	case t.Name == "":
		return listedTool{}, "empty name"
	case len(t.Name) > maxToolNameBytes:
		return listedTool{}, fmt.Sprintf("name longer than %d bytes", maxToolNameBytes)
	case !utf8.ValidString(t.Name) || strings.IndexFunc(t.Name, unicode.IsControl) >= 0:
		return listedTool{}, "name holds control characters or invalid UTF-8"
	case len(t.Description) > maxDescriptionBytes:
		return listedTool{}, fmt.Sprintf("description of %d bytes, over the %d-byte limit", len(t.Description), maxDescriptionBytes)
	case !utf8.ValidString(t.Description):
		return listedTool{}, "description is not valid UTF-8"
	}
	schema, err := json.Marshal(t.InputSchema)
	if err != nil {
		return listedTool{}, "input schema cannot be encoded"
	}
	if len(schema) > maxSchemaBytes {
		return listedTool{}, fmt.Sprintf("input schema of %d bytes, over the %d-byte limit", len(schema), maxSchemaBytes)
	}
	shape, err := Fingerprint(Declared{Name: t.Name, Description: t.Description, InputSchema: schema,
		ReadOnlyHint: t.Annotations != nil && t.Annotations.ReadOnlyHint})
	if err != nil {
		return listedTool{}, "invalid " + err.Error()
	}
	if shape.Declared.InputSchema[0] != '{' {
		return listedTool{}, "input schema is not a JSON object"
	}
	return listedTool{Shape: shape}, ""
}

func sameFingerprints(last map[string]string, listed map[string]listedTool) bool {
	if last == nil || len(last) != len(listed) {
		return false
	}
	for name, lt := range listed {
		if last[name] != lt.Fingerprint {
			return false
		}
	}
	return true
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}
