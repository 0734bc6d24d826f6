package main

import (
	"context"
	"errors"
	"fmt"
	"runtime/debug"

	"maven/app/ipc"
)

// buildInfo is what this binary was built from.
type buildInfo struct {
	Version string `json:"version"`
	// Commit is the VCS revision the binary was built from, "" when the build did not record
	// one (go run, a build outside a checkout, -buildvcs=false).
	Commit string `json:"commit"`
	// Modified says the working tree had changes the commit does not hold.
	Modified bool   `json:"modified"`
	Go       string `json:"go"`
}

// readBuildInfo reads the build info the Go toolchain embeds (vcs.revision, vcs.modified).
func readBuildInfo() buildInfo {
	info, _ := debug.ReadBuildInfo()
	return buildInfoFrom(info)
}

func buildInfoFrom(info *debug.BuildInfo) buildInfo {
	b := buildInfo{Version: version}
	if info == nil {
		return b
	}
	b.Go = info.GoVersion
	for _, s := range info.Settings {
		switch s.Key {
		case "vcs.revision":
			b.Commit = s.Value
		case "vcs.modified":
			b.Modified = s.Value == "true"
		}
	}
	return b
}

// String is "0.1.0-dev (commit 1234abcd, modified)".
func (b buildInfo) String() string {
	switch {
	case b.Commit == "":
		return b.Version + " (commit unknown)"
	case b.Modified:
		return fmt.Sprintf("%s (commit %.12s, modified)", b.Version, b.Commit)
	}
	return fmt.Sprintf("%s (commit %.12s)", b.Version, b.Commit)
}

// versionResult is `maven version --json`.
type versionResult struct {
	Binary buildInfo  `json:"binary"`
	Daemon *buildInfo `json:"daemon"` // null when no daemon answers
}

// cliVersion is `maven version`: this binary's version and commit, then the running daemon's.
func cliVersion(ctx context.Context, in *invocation, args []string) error {
	f, rest, _, err := in.parseClient("version", args, true)
	if err != nil {
		return err
	}
	if len(rest) > 0 {
		return usagef("version", "version takes no arguments")
	}
	res := versionResult{Binary: readBuildInfo()}
	var st statusResult
	switch err := f.call(ctx, "status", nil, &st); {
	case err == nil:
		res.Daemon = &buildInfo{Version: st.Version, Commit: st.Commit, Modified: st.Modified, Go: st.Go}
	case !errors.Is(err, ipc.ErrNotRunning):
		return err
	}
	if f.json {
		return writeJSON(in.stdout, res)
	}
	fmt.Fprintf(in.stdout, "maven %s\n", res.Binary)
	if res.Daemon == nil {
		fmt.Fprintf(in.stdout, "daemon not running (data directory %s)\n", f.dataDir)
	} else {
		fmt.Fprintf(in.stdout, "daemon %s\n", *res.Daemon)
	}
	return nil
}
