package mcp

import (
	"errors"
	"fmt"
	"maps"
	"time"
)

// ChurnBudget bounds how fast one server may change its tools (issue 10), so that a server
// that redefines or renames its tools without end cannot grow the database without end.
//
// Within one Window (it opens at the first change after the last one closed) a server may change
// each of its tools — redefine it, stop listing it, list it again — at most PerTool times, and
// list at most max(NewNames, the tools it had when the window opened) names it never listed
// before; the first listing of a server that has no rows yet costs nothing. A refresh that would
// go past the budget writes nothing: the reconciler refuses it with a ChurnError, and refuses
// every list of that server for a cooldown (Window, doubling with each trip in the window right
// after a trip, up to MaxCooldown). A daemon restart forgets the budget. Nothing the owner
// approved is withdrawn by a trip.
//
// Within a window, a tool redefined again and again is one audit event, the first, with a count
// of the redefinitions that followed it (allowlist.Redeclaration.CoalesceSince).
type ChurnBudget struct {
	Window      time.Duration // 1h
	PerTool     int           // 10
	NewNames    int           // 100
	MaxCooldown time.Duration // 24h
}

// Defaults for ChurnBudget.
const (
	DefaultChurnWindow      = time.Hour
	DefaultChurnPerTool     = 10
	DefaultChurnNewNames    = 100
	DefaultChurnMaxCooldown = 24 * time.Hour
)

func (b ChurnBudget) withDefaults() ChurnBudget {
	if b.Window <= 0 {
		b.Window = DefaultChurnWindow
	}
	if b.PerTool <= 0 {
		b.PerTool = DefaultChurnPerTool
	}
	if b.NewNames <= 0 {
		b.NewNames = DefaultChurnNewNames
	}
	if b.MaxCooldown < b.Window {
		b.MaxCooldown = max(b.Window, DefaultChurnMaxCooldown)
	}
	return b
}

// ErrTooManyChanges is matched by a ChurnError.
var ErrTooManyChanges = errors.New("changes its tools too often")

// ChurnError refuses a list of a server that went over its ChurnBudget.
type ChurnError struct {
	Server   string
	Detail   string        // what went over the budget
	Cooldown time.Duration // how long its lists are refused
	Until    time.Time     // when they are taken again
}

func (e *ChurnError) Error() string {
	return fmt.Sprintf("%s %s (%s); its lists are refused for %s", e.Server, ErrTooManyChanges, e.Detail, e.Cooldown)
}

// Is makes errors.Is(err, ErrTooManyChanges) true.
func (e *ChurnError) Is(target error) bool { return target == ErrTooManyChanges }

// churnState is what the budget knows of one server.
type churnState struct {
	start     time.Time      // when the window opened; zero before the first change
	allowance int            // new names allowed in the window
	newNames  int            // new names listed in the window
	changes   map[string]int // changes of each tool in the window
	tripped   bool           // the window ended in a trip
	trips     int            // windows in a row that ended in a trip
	refused   *ChurnError    // the last trip; lists are refused until refused.Until
}

// cooling returns the error that refuses the server's lists until the cooldown is over.
func (st *churnState) cooling(now time.Time) error {
	if st.refused != nil && now.Before(st.refused.Until) {
		return st.refused
	}
	return nil
}

// charge returns the state after the changes c of one refresh, or the ChurnError of the trip if
// they go over the budget. st is left as it was: the caller keeps the result only once the
// changes are written, or on a trip.
func (b ChurnBudget) charge(st churnState, server string, now time.Time, c *changes) (churnState, *ChurnError) {
	if c.counted() == 0 {
		return st, nil
	}
	if st.start.IsZero() || now.Sub(st.start) >= b.Window {
		if !st.tripped {
			st.trips = 0
		}
		st.start, st.allowance, st.newNames, st.tripped = now, max(b.NewNames, c.active), 0, false
		st.changes = map[string]int{}
	} else {
		st.changes = maps.Clone(st.changes)
	}
	var over string
	for _, name := range c.changedTools() {
		st.changes[name]++
		if n := st.changes[name]; n > b.PerTool && over == "" {
			over = fmt.Sprintf("tool %.80q changed %d times within %s", name, n, b.Window)
		}
	}
	if !c.firstList {
		st.newNames += len(c.propose)
		if st.newNames > st.allowance && over == "" {
			over = fmt.Sprintf("%d new tool names within %s, at most %d", st.newNames, b.Window, st.allowance)
		}
	}
	if over == "" {
		return st, nil
	}
	st.tripped = true
	st.trips++
	cooldown := min(b.Window<<min(st.trips-1, 16), b.MaxCooldown)
	st.refused = &ChurnError{Server: server, Detail: over, Cooldown: cooldown, Until: now.Add(cooldown)}
	return st, st.refused
}
