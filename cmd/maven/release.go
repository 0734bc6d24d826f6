package main

import (
	"context"
	"runtime/debug"
	"time"

	"maven/app/allowlist"
)

// releaseQuiet is how long the allowlist must go unwritten after a write before the memory it
// freed goes back to the kernel.
const releaseQuiet = 2 * time.Second

// releaseAfterWrites gives back to the kernel, once writes to the allowlist have paused for
// quiet, the memory the garbage collector keeps after them. A first discovery of many servers
// decodes every list at once (the MCP SDK decodes each tool's schema again through a buffer of
// its own, 32 KiB): the collector keeps the pages that garbage freed for a later burst and gives
// them back over minutes, tens of MiB the daemon seems to hold. release is debug.FreeOSMemory:
// one collection, after a burst, not after every page an owner opens (those write sessions,
// not the allowlist).
func releaseAfterWrites(ctx context.Context, tools *allowlist.Service, quiet time.Duration, release func()) {
	changed := tools.Changed()
	for {
		select {
		case <-ctx.Done():
			return
		case <-changed:
		}
		for settled := false; !settled; {
			changed = tools.Changed()
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

// freeOSMemory is what releaseAfterWrites releases with in the daemon.
func freeOSMemory() { debug.FreeOSMemory() }
