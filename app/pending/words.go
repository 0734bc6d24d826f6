package pending

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"

	"maven/app/allowlist"
	"maven/app/reveal"
)

// Words say, so that an assistant can say it, what became of a call that gives no result: it
// waits for the owner on the phone (and whether the owner was told), was denied, expired, was
// voided or interrupted, or runs still. Nothing in them can approve anything.
func (s *Service) Words(c Call) string {
	what := What(c)
	switch c.State {
	case StatePending:
		said := fmt.Sprintf("I've asked for your approval on your phone to %s; ask me again once you've approved it.", what)
		if c.Deliveries != nil && !c.Delivered() {
			said += fmt.Sprintf(" No notification could be delivered, so you may not know: it waits at %s.", s.Link(c.ID))
		}
		return said
	case StateRunning:
		return fmt.Sprintf("You approved it, and %s is running; ask me again in a moment for its result.", what)
	case StateDenied:
		return fmt.Sprintf("You denied %s, so nothing was done.", what)
	case StateExpired:
		return fmt.Sprintf("No one approved %s in time, so nothing was done; ask me again to ask once more.", what)
	case StateVoid:
		return fmt.Sprintf("The request to %s no longer stands (%s), so nothing was done.", what, c.Reason)
	case StateInterrupted:
		return fmt.Sprintf("Maven stopped while it ran %s, and does not run it again by itself: check whether it was done.", what)
	}
	return fmt.Sprintf("The request to %s %s.", what, c.State.Words())
}

// TooManyWords answer a call refused with ErrTooMany.
func (s *Service) TooManyWords() string {
	return fmt.Sprintf("%d requests already wait for your approval on your phone; approve or deny them first. Nothing was done.", s.opts.MaxPerClient)
}

// Read-back bounds: what is said of a call's arguments.
const (
	maxReadArgs  = 3
	maxReadValue = 40
)

// What is a call as said: its tool's spoken name and its arguments, "run vikunja delete task
// with id 12".
func What(c Call) string {
	said := "run " + strings.Join(allowlist.SpokenWords(c.Tool), " ")
	var args map[string]json.RawMessage
	if json.Unmarshal(c.Args, &args) != nil || len(args) == 0 {
		return said
	}
	var parts []string
	for i, k := range slices.Sorted(maps.Keys(args)) {
		if i == maxReadArgs {
			parts = append(parts, fmt.Sprintf("%d more", len(args)-maxReadArgs))
			break
		}
		v := string(args[k])
		var str string
		if json.Unmarshal(args[k], &str) == nil {
			v = str
		}
		v, _ = reveal.Cut(reveal.OneLine(v), maxReadValue, "…")
		parts = append(parts, strings.Join(allowlist.SpokenWords(k), " ")+" "+v)
	}
	return said + " with " + strings.Join(parts, ", ")
}
