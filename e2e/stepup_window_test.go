package e2e

import (
	"fmt"
	"testing"
	"time"
)

// stepUpWindow is the short step-up window of this journey's daemon.
const stepUpWindow = 2 * time.Second

// TestStepUpWindowExpires: a step-up is honoured only within the window (2 s here), measured
// from the assertion. Within it, `Enable` goes through without asking again; once it has passed,
// `Enable` asks for the passkey again — a new assertion, seen in the credential's sign count.
func TestStepUpWindowExpires(t *testing.T) {
	t.Parallel()
	j := startTaskJourney(t, stepUpWindow.String())
	m, tb, authID, fresh, stale := j.m, j.tb, j.authID, j.list, j.del

	// Within the window: the step-up already performed is what Enable spends; no new assertion.
	stepUp(t, tb, fresh.ID)
	n := signCount(t, tb, authID)
	check(t, button(row(tb, fresh.ID), "Enable").Click(), "click Enable within the window")
	check(t, tb.Expect.Locator(row(tb, fresh.ID)).ToHaveAttribute("data-state", "enabled"), "enabled within the window")
	if got := signCount(t, tb, authID); got != n {
		t.Errorf("sign count %d → %d within the window: Enable asked again", n, got)
	}

	// After the window: the step-up for this very tool has gone stale, so Enable asks again.
	stepUp(t, tb, stale.ID)
	expired := time.Now().Add(stepUpWindow + 250*time.Millisecond)
	n = signCount(t, tb, authID)
	waitFor(t, stepUpWindow+pollTimeout, fmt.Sprintf("the %s step-up window to pass", stepUpWindow), func() bool {
		return time.Now().After(expired)
	})
	check(t, button(row(tb, stale.ID), "Enable").Click(), "click Enable after the window")
	check(t, tb.Expect.Locator(row(tb, stale.ID)).ToHaveAttribute("data-state", "enabled"), "enabled after a new step-up")
	if got := signCount(t, tb, authID); got != n+1 {
		t.Errorf("sign count %d → %d after the window: want exactly one new assertion", n, got)
	}
	waitTool(t, m, stale.Name, "enabled")
}
