package agents

import (
	"slices"

	"maven/app/allowlist"
	"maven/internal/enum"
)

// Class is what an agent's call to an enabled row may do: run at once, or wait for the owner
// (docs/design.md#rule-28): a call that needs the owner becomes a pending call, approved on the
// phone (docs/design.md#rule-31), and its class's words say why.
type Class string

// The call classes, in the order Classify tests them.
const (
	// ClassWithinLimits: the owner chose to run the calls within the row's limits without
	// asking, and this one is within them (docs/design.md#rule-33).
	ClassWithinLimits Class = "within_limits"
	// ClassRunNow: the row is not destructive, claims read-only, and the call carries no
	// arguments or the row's server names it in allow_tools.
	ClassRunNow Class = "run_now"
	// ClassDestructive: the row is destructive (it does not promise to be read-only, or the
	// owner's config says so), so every call needs the owner.
	ClassDestructive Class = "destructive"
	// ClassNotReadOnly: the row is not marked destructive but does not claim read-only.
	ClassNotReadOnly Class = "not_read_only"
	// ClassArguments: a read-only row called with arguments its server's allow_tools does not
	// let it take without the owner (readOnlyHint is the far end's word; allow_tools is local).
	ClassArguments Class = "arguments"
)

// classes are the call classes with their words: why a call needs the owner, said to the
// owner (and, through the agent, aloud). TestEveryClassHasItsWords fails on a class without
// (docs/style.md#enumerations).
var classes = enum.Table[Class, string]{
	{Member: ClassWithinLimits, Said: "it is within the limits you let run without asking"},
	{Member: ClassRunNow, Said: "it only reads, so it runs at once"},
	{Member: ClassDestructive, Said: "it can change things"},
	{Member: ClassNotReadOnly, Said: "its server does not promise that it only reads"},
	{Member: ClassArguments, Said: "it was given arguments, and its server's allow_tools does not name it"},
}

// Classes returns every call class, in the order Classify tests them.
func Classes() []Class { return classes.Members() }

// Words are why a call of the class runs or waits, in words for the owner: "it can change
// things". A class this daemon does not know reads as it is recorded.
func (c Class) Words() string {
	if words, ok := classes.Of(c); ok {
		return words
	}
	return string(c)
}

// NeedsOwner reports whether a call of the class waits for the owner.
func (c Class) NeedsOwner() bool { return c != ClassRunNow && c != ClassWithinLimits }

// Classify is the one decision of rule 28: what an agent's call with args to row, an enabled
// row that fits the call, may do. allowTools is the row's server's allow_tools; unasked says
// that the owner let the calls within the row's limits run without asking and that args are
// within them (docs/design.md#rule-33).
func Classify(row allowlist.Tool, args map[string]any, allowTools []string, unasked bool) Class {
	switch {
	case unasked:
		return ClassWithinLimits
	case row.Destructive:
		return ClassDestructive
	case !row.ReadOnly:
		return ClassNotReadOnly
	case len(args) > 0 && !slices.Contains(allowTools, row.RemoteName()):
		return ClassArguments
	}
	return ClassRunNow
}
