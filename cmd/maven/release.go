package main

import (
	"context"
	"runtime/debug"
	"time"
)

// releaseQuiet is how long a burst (writes to the allowlist, agents' listings) must pause before
// the memory it freed goes back to the kernel.
const releaseQuiet = 2 * time.Second

// releaseAfterBursts gives back to the kernel, once the events changed signals (each call's
// channel closed by the next) have paused for quiet, the memory the garbage collector keeps
// after them: writes to the allowlist (allowlist.Service.Changed) and agents' listings
// (agents.Service.Listed, a hundred sessions listing 1,000 tools each). A first discovery of many servers
// decodes every list at once (the MCP SDK decodes each tool's schema again through a buffer of
// its own, 32 KiB): the collector keeps the pages that garbage freed for a later burst and gives
// them back over minutes, tens of MiB the daemon seems to hold. release is debug.FreeOSMemory:
// one collection, after a burst, not after every page an owner opens (those write sessions,
// not the allowlist) nor every agent's call.
func releaseAfterBursts(ctx context.Context, signal func() <-chan struct{}, quiet time.Duration, release func()) {
	changed := signal()
	for {
		select {
		case <-ctx.Done():
			return
		case <-changed:
		}
		for settled := false; !settled; {
			changed = signal()
			wait := time.NewTimer(quiet)
			select {
			case <-ctx.Done():
				wait.Stop()
				return
			case <-changed:
			case <-wait.C:
				settled = true
			}
			wait.Stop()
		}
		release()
	}
}

// freeOSMemory is what releaseAfterBursts releases with in the daemon.
func freeOSMemory() { debug.FreeOSMemory() }
