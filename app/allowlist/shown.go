package allowlist

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
)

// ErrShapeChanged is matched (errors.Is) by every *ShapeChangedError.
var ErrShapeChanged = errors.New("the tool changed since it was shown")

// ShapeChangedError refuses to approve a row whose shape is no longer the one the owner's page
// showed (docs/design.md#rule-21): nothing was changed.
type ShapeChangedError struct {
	Tool  Tool   // the row as it is now
	Shown string // the digest of the shape the owner was shown
}

func (e *ShapeChangedError) Error() string {
	return fmt.Sprintf("tool %d was shown as %s but is now %s", e.Tool.ID, e.Shown, e.Tool.ApprovalDigest())
}

// Is makes errors.Is(err, ErrShapeChanged) true.
func (e *ShapeChangedError) Is(target error) bool { return target == ErrShapeChanged }

// ApprovalDigest is what an approval of the row binds to: one digest of the shape the owner is
// shown, which the page carries as data-fingerprint. An MCP row's is its Fingerprint
// (docs/design.md#rule-7). A row without one — a local command, or an MCP row that predates
// fingerprints — gets "sha256:" + hex of SHA-256 over the JSON of its name, command, description,
// input schema and read-only claim: everything the page shows of it that can change. (A local row's
// command is its identity and never changes, but a config reload can give it another spoken name.)
func (t Tool) ApprovalDigest() string {
	if t.Fingerprint != "" {
		return t.Fingerprint
	}
	b, err := json.Marshal(struct {
		Name        string          `json:"name"`
		Cmd         []string        `json:"cmd"`
		Description string          `json:"description"`
		InputSchema json.RawMessage `json:"inputSchema"`
		ReadOnly    bool            `json:"readOnly"`
	}{t.Name, t.Cmd, t.Description, schemaOrEmpty(t.InputSchema), t.ReadOnly})
	if err != nil {
		// Only a stored schema that is not JSON fails; it is then part of the digest as text.
		b = fmt.Appendf(nil, "%q %q %q %q %v", t.Name, t.Cmd, t.Description, t.InputSchema, t.ReadOnly)
	}
	sum := sha256.Sum256(b)
	return "sha256:" + hex.EncodeToString(sum[:])
}

// CheckShown returns a *ShapeChangedError unless t is still the shape whose digest the owner
// was shown.
func CheckShown(t Tool, shown string) error {
	if t.ApprovalDigest() != shown {
		return &ShapeChangedError{Tool: t, Shown: shown}
	}
	return nil
}

// DeclaredWhen returns the declared shape row id had while its fingerprint was fingerprint, as
// its audit trail recorded it when the far end redefined the row; "" when the trail does not
// say (the row never had that fingerprint, or it is the current one).
func (s *Service) DeclaredWhen(ctx context.Context, id int64, fingerprint string) (string, error) {
	events, err := s.store.ListEvents(ctx, id)
	if err != nil {
		return "", fmt.Errorf("events of tool %d: %w", id, err)
	}
	for i := len(events) - 1; i >= 0; i-- {
		if events[i].Action != actionRedefined {
			continue
		}
		// A redefinition counted as a repeat of this one left only its latest detail, which is
		// later than the event's own.
		for _, detail := range []json.RawMessage{events[i].LastRepeatDetail, events[i].Detail} {
			var d struct {
				PreviousFingerprint string `json:"previous_fingerprint"`
				PreviousDeclared    string `json:"previous_declared"`
			}
			if json.Unmarshal(detail, &d) == nil && d.PreviousFingerprint == fingerprint && fingerprint != "" {
				return d.PreviousDeclared, nil
			}
		}
	}
	return "", nil
}
