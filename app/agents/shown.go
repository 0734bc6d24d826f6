package agents

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"strconv"
	"sync/atomic"

	"github.com/google/jsonschema-go/jsonschema"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"maven/app/allowlist"
	"maven/app/limits"
	"maven/app/mcp"
)

// entry is one enabled row as agents are shown it: the row as it was read, its tool, its
// approved input schema resolved once for checking calls' arguments, and the owner's limits on
// them (nil without any).
type entry struct {
	row    allowlist.Tool
	key    string // what the tool shows depends on; another key is another tool
	tool   *sdk.Tool
	schema *jsonschema.Resolved
	limits *limits.Active
}

// absent are the properties of the shown schema that args leave out, in the schema's order by
// name: a pending call's page says they will be sent absent.
func (e *entry) absent(args map[string]any) []string {
	var out []string
	for _, name := range slices.Sorted(maps.Keys(e.schema.Schema().Properties)) {
		if _, ok := args[name]; !ok {
			out = append(out, name)
		}
	}
	return out
}

// shownRows is what the enabled rows show, as of the last read, and each row's entry, kept
// while its key stays the same so that a schema is resolved once per shape, not per call.
type shownRows struct {
	// changed and limited are closed once the rows, or their limits, changed since entries
	// were read.
	changed, limited <-chan struct{}
	version          uint64 // the rows' version before that read (Rows.ChangedSince)
	entries          []*entry
	byID             map[int64]*entry
	// gen counts the reads; delta are the ids whose entry the last one changed (new, gone or
	// another), and prev the entries before it: a client whose servers show the read before
	// applies only those (Service.apply).
	gen   uint64
	delta []int64
	prev  map[int64]*entry
	// last is the last read, for calls (still): read runs under the service's reconcile lock,
	// a call under none.
	last atomic.Pointer[shownRead]
}

// shownRead is one read of the enabled rows: the entries it gave, by row id, and what is
// closed once an update or a save of limits commits after it.
type shownRead struct {
	changed, limited <-chan struct{}
	byID             map[int64]*entry
}

// still reports whether e is what the enabled rows show now: the last read gave it, and no
// update of the rows or save of limits has committed since. A call's row is then read again from
// memory, as the run path answers from memory while the rows' version has not moved
// (allowlist.Service.Runnable).
func (r *shownRows) still(e *entry) bool {
	read := r.last.Load()
	return read != nil && read.byID[e.row.ID] == e && !isClosed(read.changed) && !isClosed(read.limited)
}

// read makes entries those of the enabled rows as they are now: it keeps the last read if no
// update or save of limits committed since; after updates alone, it takes that read's with the
// rows those updates wrote read again (a redefined row's change reaches agents without listing every
// enabled row, docs/design.md#rule-27); else every enabled row read again.
func (r *shownRows) read(ctx context.Context, rows Rows, lim Limits, log *slog.Logger) error {
	if r.changed != nil && !isClosed(r.changed) && !isClosed(r.limited) {
		return nil
	}
	changed, limited, version := rows.Changed(), lim.Changed(), rows.Version()
	var written []int64
	partial := false
	if r.changed != nil && !isClosed(r.limited) {
		written, partial = rows.ChangedSince(r.version)
	}
	var list []allowlist.Tool
	var err error
	switch {
	case !partial:
		list, err = rows.List(ctx, allowlist.Filter{States: []allowlist.State{allowlist.StateEnabled}})
	case len(written) > 0:
		// In any state: a row no longer enabled leaves.
		list, err = rows.List(ctx, allowlist.Filter{IDs: written})
	}
	if err != nil {
		return fmt.Errorf("agents: list the enabled rows: %w", err)
	}
	in, err := lim.InForce(ctx, list)
	if err != nil {
		return fmt.Errorf("agents: read the limits: %w", err)
	}
	byID := make(map[int64]*entry, len(r.byID))
	if partial {
		maps.Copy(byID, r.byID)
		for _, id := range written {
			delete(byID, id)
		}
	}
	for _, row := range list {
		if row.State != allowlist.StateEnabled {
			continue
		}
		e := r.byID[row.ID]
		if e == nil || e.key != shownKey(row, in[row.ID]) {
			if e, err = newEntry(row, in[row.ID]); err != nil {
				log.Warn("agents: an enabled tool is not offered to agents", "tool", row.Name, "err", err)
				continue
			}
		}
		byID[row.ID] = e
	}
	entries := slices.SortedFunc(maps.Values(byID), func(a, b *entry) int { return cmp.Compare(a.row.ID, b.row.ID) })
	var delta []int64
	for id, e := range byID {
		if r.byID[id] != e {
			delta = append(delta, id)
		}
	}
	for id := range r.byID {
		if byID[id] == nil {
			delta = append(delta, id)
		}
	}
	r.gen, r.prev, r.delta = r.gen+1, r.byID, delta
	r.changed, r.limited, r.version, r.entries, r.byID = changed, limited, version, entries, byID
	r.last.Store(&shownRead{changed: changed, limited: limited, byID: byID})
	return nil
}

func isClosed(ch <-chan struct{}) bool {
	select {
	case <-ch:
		return true
	default:
		return false
	}
}

// shownKey is what a row's tool depends on: its approved shape (its fingerprint, or for a row
// without one the digest of what the owner saw), its local name, its destructive flag and the
// limits in force on it (nil for none).
func shownKey(row allowlist.Tool, in *limits.Active) string {
	key := row.ApprovalDigest() + "\x00" + row.Name + "\x00" + strconv.FormatBool(row.Destructive)
	if in != nil {
		key += "\x00" + in.Canonical
	}
	return key
}

// newEntry is what agents are shown of an enabled row (docs/design.md#rule-27): its local
// name, and the description, input schema and read-only claim of its approved declared shape,
// its destructive flag as destructiveHint, and nothing else — no title, output schema, icons
// or _meta, which the fingerprint does not cover. A local command is shown with an empty object
// schema: it takes no arguments from agents. A row with limits in force shows its schema
// narrowed by them (docs/design.md#rule-33); its calls are checked against the approved schema,
// then against the limits, so that each refusal names what refused it.
func newEntry(row allowlist.Tool, in *limits.Active) (*entry, error) {
	desc, schema, readOnly := row.Description, row.InputSchema, row.ReadOnly
	switch {
	case !row.IsMCP():
		schema = nil
	case row.Declared != "":
		d, err := mcp.ParseDeclared(row.Declared)
		if err != nil {
			return nil, fmt.Errorf("its declared shape: %w", err)
		}
		desc, schema, readOnly = d.Description, d.InputSchema, d.ReadOnlyHint
	}
	shown, resolved, err := objectSchema(schema)
	if err != nil {
		return nil, err
	}
	if in != nil {
		if shown, err = limits.Narrow(shown, in.Set); err != nil {
			return nil, fmt.Errorf("its limits: %w", err)
		}
	}
	destructive := row.Destructive
	return &entry{row: row, key: shownKey(row, in), schema: resolved, limits: in, tool: &sdk.Tool{
		Name:        row.Name,
		Description: desc,
		InputSchema: shown,
		Annotations: &sdk.ToolAnnotations{ReadOnlyHint: readOnly, DestructiveHint: &destructive},
	}}, nil
}

// objectSchema returns the schema to show, and the same schema resolved for checking
// arguments. The schema is shown as approved, byte for byte, but for one thing: a call's
// arguments are always an object, so a schema that names no type (none at all, {}) is shown
// with "type": "object" first. One that names another type cannot describe a tool's arguments
// and is refused.
func objectSchema(raw json.RawMessage) (json.RawMessage, *jsonschema.Resolved, error) {
	shown := bytes.TrimSpace(raw)
	if len(shown) == 0 || string(shown) == "null" {
		shown = []byte("{}")
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal(shown, &m); err != nil || m == nil {
		return nil, nil, fmt.Errorf("its input schema is not a JSON object")
	}
	switch typ, ok := m["type"]; {
	case !ok:
		rest := bytes.TrimSpace(shown[1:])
		if rest[0] == '}' {
			shown = []byte(`{"type":"object"}`)
		} else {
			shown = append([]byte(`{"type":"object",`), rest...)
		}
	case string(typ) != `"object"`:
		return nil, nil, fmt.Errorf("its input schema's type is %s, not \"object\"", typ)
	}
	// The checking copy is validated as draft 2020-12 when it names a draft jsonschema-go
	// cannot validate (its validate.go: draft-07 and 2020-12): an older draft's keywords are
	// read as 2020-12's, rather than no call fitting at all.
	checking := shown
	if v, ok := m["$schema"]; ok {
		var name string
		if json.Unmarshal(v, &name) != nil || !validatable[name] {
			delete(m, "$schema")
			m["type"] = json.RawMessage(`"object"`)
			var err error
			if checking, err = json.Marshal(m); err != nil {
				return nil, nil, err
			}
		}
	}
	var s jsonschema.Schema
	if err := json.Unmarshal(checking, &s); err != nil {
		return nil, nil, fmt.Errorf("its input schema: %w", err)
	}
	resolved, err := s.Resolve(nil)
	if err != nil {
		return nil, nil, fmt.Errorf("its input schema cannot be resolved: %w", err)
	}
	return json.RawMessage(shown), resolved, nil
}

// validatable are the $schema values jsonschema-go validates.
var validatable = map[string]bool{
	"http://json-schema.org/draft-07/schema#":      true,
	"https://json-schema.org/draft-07/schema#":     true,
	"https://json-schema.org/draft/2020-12/schema": true,
}

// errArgsNotObject refuses arguments that are not a JSON object.
var errArgsNotObject = errors.New("the arguments must be a JSON object")

// arguments reads a call's raw arguments (absent or null: none) and checks them against the
// row's approved input schema: a missing required property, a wrong type, a property the
// schema forbids, each named in the error (docs/design.md#rule-28).
func (e *entry) arguments(raw json.RawMessage) (map[string]any, error) {
	args := map[string]any{}
	if t := bytes.TrimSpace(raw); len(t) > 0 && string(t) != "null" {
		var v any
		if err := json.Unmarshal(t, &v); err != nil {
			return nil, errArgsNotObject
		}
		m, ok := v.(map[string]any)
		if !ok {
			return nil, errArgsNotObject
		}
		args = m
	}
	if err := e.schema.Validate(args); err != nil {
		return nil, err
	}
	return args, nil
}
