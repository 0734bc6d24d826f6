// Package phrases holds the owner's phrases (docs/design.md#rule-15b): sentence templates in Home
// Assistant's syntax ("what do you know about {query}") that bind spoken words to named
// properties of an MCP tool's input. A phrase is the owner's own binding, not a guess, so it may
// fill what positional binding (docs/design.md#rule-15) must not: several properties, optional
// ones, those of a mutating tool.
//
// It owns the templates (Parse, Compile, Template.Match), the coercion of a slot's words to its
// property's type (Coerce) and the saved phrases (Service). It enforces:
//   - phrases are saved only with an auth.StepUp for set_phrases on that row, naming the
//     fingerprint the owner's page showed, and are stored with it (Service.Save);
//   - a redefinition voids them: they apply only to an enabled row of the very shape they were
//     saved for (Saved.UsableFor);
//   - every line that cannot be used is refused, each named, before the passkey is asked for,
//     and a save that refuses one keeps what was there (Check);
//   - a template may name only properties of the tool's schema, at most MaxLines a tool, each at
//     most MaxLineLen bytes; a value that does not fit its type is a CoerceError, so the turn
//     asks for it again.
//
// Store is the storage it needs; db implements it.
package phrases
