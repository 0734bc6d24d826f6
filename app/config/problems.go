package config

import (
	"slices"
	"sync"
)

// Problem is something about the config that the daemon started despite: a config tool it could
// not propose, a warning about a key. The daemon logs each, `maven status` lists them, and the
// /tools page can show them (Problems.List).
type Problem struct {
	Key string `json:"key"` // the config key at fault, such as "tools[0].name"
	Msg string `json:"message"`
	// Level is "error" when that part of the config is not in effect, "warning" when it was
	// accepted but may not do what its author expects.
	Level string `json:"level"`
}

// Problem levels.
const (
	LevelError   = "error"
	LevelWarning = "warning"
)

// WarningProblems returns the config's warnings as problems.
func (c Config) WarningProblems() []Problem {
	out := make([]Problem, 0, len(c.Warnings))
	for _, w := range c.Warnings {
		out = append(out, Problem{Key: w.Key, Msg: w.Msg, Level: LevelWarning})
	}
	return out
}

// Problems is the daemon's current list of config problems, safe for concurrent use: a reload
// replaces it while pages and IPC calls read it.
type Problems struct {
	mu   sync.Mutex
	list []Problem
}

// Set replaces the list.
func (p *Problems) Set(list []Problem) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.list = slices.Clone(list)
}

// List returns a copy of the list, errors first; never nil.
func (p *Problems) List() []Problem {
	p.mu.Lock()
	defer p.mu.Unlock()
	out := append([]Problem{}, p.list...)
	slices.SortStableFunc(out, func(a, b Problem) int {
		if a.Level == b.Level {
			return 0
		}
		if a.Level == LevelError {
			return -1
		}
		return 1
	})
	return out
}
