package config

import (
	"maps"
	"slices"
	"time"
)

// Agents tunes the calls that wait for the owner's approval on the phone (the "agents" block,
// docs/design.md#config and docs/design.md#rule-31). A zero field means the pending calls'
// default: 8 seconds' wait, 5 minutes' expiry.
type Agents struct {
	// ApprovalWait is how long an agent's request waits for the owner's approval before it is
	// answered with what waits and where: inside Home Assistant's 10 seconds.
	ApprovalWait time.Duration
	// ApprovalTTL is how long a pending call waits for the owner before it expires.
	ApprovalTTL time.Duration
}

// Limits of the agents block.
const (
	MaxApprovalWait = time.Minute
	MinApprovalTTL  = 10 * time.Second
	MaxApprovalTTL  = 24 * time.Hour
)

var agentsKeys = []string{"approval_wait", "approval_ttl"}

// agents reads the block: a wait above 0 and at most a minute, an expiry from 10 seconds to a
// day, and, when both are set, the wait shorter than the expiry.
func (d *decoder) agents(raw []byte, path string) Agents {
	obj, ok := d.object(raw, path)
	if !ok {
		return Agents{}
	}
	var a Agents
	for _, key := range slices.Sorted(maps.Keys(obj)) {
		p, raw := keyPath(path, key), obj[key]
		switch key {
		case "approval_wait":
			before := d.mark()
			a.ApprovalWait = d.duration(raw, p)
			if !d.failed(before) && (a.ApprovalWait <= 0 || a.ApprovalWait > MaxApprovalWait) {
				d.failf(p, "expected a duration above 0 and at most "+shortDuration(MaxApprovalWait)+", got "+shortDuration(a.ApprovalWait))
			}
		case "approval_ttl":
			before := d.mark()
			a.ApprovalTTL = d.duration(raw, p)
			if !d.failed(before) && (a.ApprovalTTL < MinApprovalTTL || a.ApprovalTTL > MaxApprovalTTL) {
				d.failf(p, "expected a duration from "+shortDuration(MinApprovalTTL)+" to "+shortDuration(MaxApprovalTTL)+", got "+shortDuration(a.ApprovalTTL))
			}
		default:
			d.unknown(path, key, agentsKeys)
		}
	}
	if a.ApprovalWait > 0 && a.ApprovalTTL > 0 && a.ApprovalWait >= a.ApprovalTTL {
		d.failf(keyPath(path, "approval_wait"), "expected less than approval_ttl ("+shortDuration(a.ApprovalTTL)+"), got "+shortDuration(a.ApprovalWait))
	}
	return a
}
