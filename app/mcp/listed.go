package mcp

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"maven/internal/jcs"
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

// listedTool is a tool from a list that passed the sanity checks, in canonical form.
type listedTool struct {
	Shape
}

// schemaKey is the canonical input schema, for rename detection.
func (lt listedTool) schemaKey() string { return string(lt.Declared.InputSchema) }

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
	schema, err := canonicalInputSchema(t.InputSchema)
	if err != nil {
		return listedTool{}, "invalid input schema: " + err.Error()
	}
	if len(schema) > maxSchemaBytes {
		return listedTool{}, fmt.Sprintf("input schema of %d bytes, over the %d-byte limit", len(schema), maxSchemaBytes)
	}
	if schema[0] != '{' {
		return listedTool{}, "input schema is not a JSON object"
	}
	shape, err := fingerprintCanonical(Declared{Name: t.Name, Description: t.Description,
		ReadOnlyHint: t.Annotations != nil && t.Annotations.ReadOnlyHint}, schema)
	if err != nil {
		return listedTool{}, "cannot fingerprint it: " + err.Error()
	}
	return listedTool{Shape: shape}, ""
}

// canonicalInputSchema is the canonical form of a listed input schema, {} when there is none.
// go-sdk hands it over decoded (a map[string]any), so it is canonicalised from that value
// rather than encoded and parsed again; anything else is encoded first.
func canonicalInputSchema(v any) ([]byte, error) {
	if v == nil {
		return []byte("{}"), nil
	}
	schema, err := CanonicalizeValue(v)
	if !errors.Is(err, jcs.ErrNotDecoded) {
		return schema, err
	}
	raw, err := json.Marshal(v)
	if err != nil {
		return nil, fmt.Errorf("cannot be encoded: %w", err)
	}
	return canonicalSchema(raw)
}
