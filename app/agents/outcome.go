package agents

import "slices"

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
// TestEveryOutcomeHasItsWords fails on an outcome without.
var outcomes = []outcomeWords{
	{OutcomeRan, "ran"},
	{OutcomeNeedsOwner, "needs the owner"},
	{OutcomeBadArguments, "arguments did not fit"},
	{OutcomeChanged, "changed since listed"},
	{OutcomeLocked, "locked"},
	{OutcomeFailed, "failed"},
}

type outcomeWords struct {
	outcome Outcome
	words   string
}

// Outcomes returns every outcome, in the order a call meets them.
func Outcomes() []Outcome {
	out := make([]Outcome, len(outcomes))
	for i, o := range outcomes {
		out[i] = o.outcome
	}
	return out
}

// Words are the outcome in words for the owner: "needs the owner". An outcome this daemon does
// not know reads as it is recorded.
func (o Outcome) Words() string {
	if i := slices.IndexFunc(outcomes, func(e outcomeWords) bool { return e.outcome == o }); i >= 0 {
		return outcomes[i].words
	}
	return string(o)
}
