package agents

import "maven/internal/enum"

// Outcome is what came of an agent's call; it is the call's entry's outcome in the activity
// feed.
type Outcome string

// The outcomes of an agent's call.
const (
	// OutcomeRan: the row ran, and its result (a tool error among them) went back.
	OutcomeRan Outcome = "ran"
	// OutcomeNeedsOwner: the call needs the owner (its Class says why), so nothing ran.
	OutcomeNeedsOwner Outcome = "needs_owner"
	// OutcomeBadArguments: the arguments do not fit the approved input schema; nothing ran.
	OutcomeBadArguments Outcome = "bad_arguments"
	// OutcomeOutsideLimits: the arguments fit the schema but not the owner's limits on the row
	// (docs/design.md#rule-33); nothing ran, nothing was sent.
	OutcomeOutsideLimits Outcome = "outside_limits"
	// OutcomeChanged: the row changed since the agent listed it (disabled, redefined,
	// withdrawn, or no longer among its client's tools); nothing ran.
	OutcomeChanged Outcome = "changed"
	// OutcomeLocked: the daemon is locked; nothing ran.
	OutcomeLocked Outcome = "locked"
	// OutcomeFailed: the row could not be run (its server could not be reached, or did not
	// answer in time).
	OutcomeFailed Outcome = "failed"
)

// outcomes are the outcomes with their words, as the owner is shown them.
// TestEveryOutcomeHasItsWords fails on an outcome without (docs/style.md#enumerations).
var outcomes = enum.Table[Outcome, string]{
	{Member: OutcomeRan, Said: "ran"},
	{Member: OutcomeNeedsOwner, Said: "needs the owner"},
	{Member: OutcomeBadArguments, Said: "arguments did not fit"},
	{Member: OutcomeOutsideLimits, Said: "outside your limits"},
	{Member: OutcomeChanged, Said: "changed since listed"},
	{Member: OutcomeLocked, Said: "locked"},
	{Member: OutcomeFailed, Said: "failed"},
}

// Outcomes returns every outcome, in the order a call meets them.
func Outcomes() []Outcome { return outcomes.Members() }

// Words are the outcome in words for the owner: "needs the owner". An outcome this daemon does
// not know reads as it is recorded.
func (o Outcome) Words() string {
	if words, ok := outcomes.Of(o); ok {
		return words
	}
	return string(o)
}
