package config

import (
	"slices"
	"sync"
	"time"
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

// Refusal is a config a reload read and refused whole, for its errors: the daemon runs on as it
// was.
type Refusal struct {
	At     time.Time `json:"at"`
	File   string    `json:"file"`   // the file read
	Errors []Problem `json:"errors"` // every error of the file (ProblemsOf)
}

// Problems is the daemon's current list of config problems, and the refusal of the last reload
// if it was refused; safe for concurrent use: a reload replaces them while pages and IPC calls
// read them.
type Problems struct {
	mu      sync.Mutex
	list    []Problem
	refusal *Refusal
}

// Set replaces the list with the problems of a config just applied; a refusal before it is over.
func (p *Problems) Set(list []Problem) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.list = slices.Clone(list)
	p.refusal = nil
}

// Refuse records that a reload refused a config; the list stays that of the config still
// running.
func (p *Problems) Refuse(r Refusal) {
	p.mu.Lock()
	defer p.mu.Unlock()
	r.Errors = slices.Clone(r.Errors)
	p.refusal = &r
}

// Refused returns the refusal of the last reload, and false when the last reload applied its
// config (or none was tried).
func (p *Problems) Refused() (Refusal, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.refusal == nil {
		return Refusal{}, false
	}
	r := *p.refusal
	r.Errors = slices.Clone(r.Errors)
	return r, true
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
