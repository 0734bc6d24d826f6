package pending

import "maven/internal/enum"

// State is where a pending call stands (docs/design.md#rule-30): pending → ran, denied, expired,
// void or interrupted, through running once the owner approved it.
type State string

// The states of a pending call, in the order a call meets them.
const (
	// StatePending: it waits for the owner, until it expires.
	StatePending State = "pending"
	// StateRunning: the owner approved it and its run has begun. It is written before the run,
	// so that a crash leaves it here and the next start marks it interrupted.
	StateRunning State = "running"
	// StateRan: it ran once; its result is kept with it.
	StateRan State = "ran"
	// StateDenied: the owner denied it; nothing ran.
	StateDenied State = "denied"
	// StateExpired: no one approved it in time; nothing ran.
	StateExpired State = "expired"
	// StateVoid: its row was disabled or redefined, or is gone; nothing ran.
	StateVoid State = "void"
	// StateInterrupted: the daemon stopped during its run; it is never run again by itself, and
	// whether the tool did anything is for the owner to check.
	StateInterrupted State = "interrupted"
)

type stateFacts struct {
	words string // what the owner is told of a call in this state
	final bool   // nothing more happens to the call
}

// states are every state with its words and whether it is final; TestEveryStateHasItsWords
// fails on one without (docs/style.md#enumerations).
var states = enum.Table[State, stateFacts]{
	{Member: StatePending, Said: stateFacts{"waits for your approval", false}},
	{Member: StateRunning, Said: stateFacts{"approved, running", false}},
	{Member: StateRan, Said: stateFacts{"ran", true}},
	{Member: StateDenied, Said: stateFacts{"denied", true}},
	{Member: StateExpired, Said: stateFacts{"expired: not approved in time", true}},
	{Member: StateVoid, Said: stateFacts{"void: the tool changed", true}},
	{Member: StateInterrupted, Said: stateFacts{"interrupted by a restart, not run again", true}},
}

// States returns every state, in the order a call meets them.
func States() []State { return states.Members() }

// Words are what the owner is told of a call in the state: "waits for your approval". A state
// this daemon does not know reads as it is stored.
func (s State) Words() string {
	if f, ok := states.Of(s); ok {
		return f.words
	}
	return string(s)
}

// Final reports whether nothing more happens to a call in the state.
func (s State) Final() bool {
	f, ok := states.Of(s)
	return ok && f.final
}

// Event is what happened to a pending call, as the activity feed records it (action
// activity.ActionApproval, the event its outcome).
type Event string

// The events of a pending call.
const (
	EventCreated     Event = "created"
	EventApproved    Event = "approved"
	EventDenied      Event = "denied"
	EventExpired     Event = "expired"
	EventVoided      Event = "voided"
	EventRan         Event = "ran"
	EventInterrupted Event = "interrupted"
)

// events are every event with its words, as /activity says them; TestEveryEventHasItsWords
// fails on one without (docs/style.md#enumerations).
var events = enum.Table[Event, string]{
	{Member: EventCreated, Said: "asked for approval"},
	{Member: EventApproved, Said: "approved"},
	{Member: EventDenied, Said: "denied"},
	{Member: EventExpired, Said: "expired"},
	{Member: EventVoided, Said: "voided"},
	{Member: EventRan, Said: "ran"},
	{Member: EventInterrupted, Said: "interrupted"},
}

// Events returns every event, in the order a call meets them.
func Events() []Event { return events.Members() }

// Words are the event in words for the owner: "asked for approval". An event this daemon does
// not know reads as it is recorded.
func (e Event) Words() string {
	if w, ok := events.Of(e); ok {
		return w
	}
	return string(e)
}
