package allowlist

import (
	"encoding/json"
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
