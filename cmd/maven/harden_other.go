//go:build !linux

package main

// forbidMemoryReads does nothing where prctl does not exist; run Maven on Linux to keep
// other processes of its user out of its memory.
func forbidMemoryReads() error { return nil }

// clobberFreed does nothing here; set GODEBUG=clobberfree=1 in the daemon's environment to have
// freed memory overwritten (see the Linux version).
func clobberFreed([]string, func(string) string) error { return nil }
