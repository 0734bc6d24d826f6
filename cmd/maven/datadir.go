package main

import (
	"errors"
	"path/filepath"
	"strings"
)

// defaultDataDir is where the daemon keeps its state when neither --data nor MAVEN_DATA names
// a directory: the state directory systemd made for it (StateDirectory=), else
// $XDG_STATE_HOME/maven, else ~/.local/state/maven; "" when none can be found. A relative one
// is made absolute, so the log and error messages name exactly where it is.
func defaultDataDir(getenv func(string) string) string {
	var dir string
	switch {
	case getenv("MAVEN_DATA") != "":
		dir = getenv("MAVEN_DATA")
	case getenv("STATE_DIRECTORY") != "":
		// systemd lists one path per StateDirectory=, separated by colons; Maven's is the first.
		dir, _, _ = strings.Cut(getenv("STATE_DIRECTORY"), ":")
	case getenv("XDG_STATE_HOME") != "":
		dir = filepath.Join(getenv("XDG_STATE_HOME"), "maven")
	case getenv("HOME") != "":
		dir = filepath.Join(getenv("HOME"), ".local", "state", "maven")
	default:
		return ""
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return dir
	}
	return abs
}

// absDataDir makes the data directory a flag named absolute, refusing none at all.
func absDataDir(dir string) (string, error) {
	if dir == "" {
		return "", usageError{"no data directory: pass --data DIR or set MAVEN_DATA (neither HOME nor XDG_STATE_HOME is set)"}
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return "", errors.Join(usageError{"cannot make the data directory absolute"}, err)
	}
	return abs, nil
}
