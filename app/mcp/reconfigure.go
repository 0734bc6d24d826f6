package mcp

import (
	"context"
	"maps"
	"slices"
	"time"

	"maven/app/config"
)

// supervisorSet is the servers a Manager runs. It is never changed once published: Reconfigure
// builds a new one.
type supervisorSet struct {
	byName map[string]*supervisor
	names  []string // sorted
	// allow is each server's allow_tools, which a reload changes without a new session.
	allow map[string][]string
}

func newSupervisorSet() *supervisorSet {
	return &supervisorSet{byName: map[string]*supervisor{}, allow: map[string][]string{}}
}

// add puts s in the set, with the allow_tools of its config; names are added in order.
func (set *supervisorSet) add(s *supervisor) {
	set.byName[s.name] = s
	set.names = append(set.names, s.name)
	set.allow[s.name] = slices.Clone(s.cfg.AllowTools)
}

// list returns the supervisors sorted by name.
func (set *supervisorSet) list() []*supervisor {
	out := make([]*supervisor, len(set.names))
	for i, name := range set.names {
		out[i] = set.byName[name]
	}
	return out
}

// running is one supervisor's goroutine: stop ends it, and done is closed once it has returned,
// its session closed (a stdio server's process has exited by then).
type running struct {
	stop context.CancelFunc
	done chan struct{}
}

// start runs s on a goroutine of its own, under Run's context, its first dial after
// firstDialIn. m.mu must be held, Run called and Close not.
func (m *Manager) start(s *supervisor, firstDialIn time.Duration) {
	ctx, stop := context.WithCancel(m.runCtx)
	r := &running{stop: stop, done: make(chan struct{})}
	m.runs[s] = r
	m.wg.Go(func() {
		defer close(r.done)
		defer stop()
		s.run(ctx, firstDialIn)
	})
}

// stopAll stops the supervisors and waits until each has closed its session.
func (m *Manager) stopAll(sups []*supervisor) {
	var stopped []*running
	m.mu.Lock()
	for _, s := range sups {
		if r, ok := m.runs[s]; ok {
			delete(m.runs, s)
			stopped = append(stopped, r)
		}
	}
	m.mu.Unlock()
	for _, r := range stopped {
		r.stop()
	}
	for _, r := range stopped {
		<-r.done
	}
}

// Reconfigured is what one Reconfigure did, each list sorted by server name.
type Reconfigured struct {
	Added     []string // new servers, started
	Restarted []string // servers whose settings changed: stopped, and started with the new ones
	Updated   []string // servers whose allow_tools alone changed: their sessions go on
	Removed   []string // servers no longer configured: stopped
}

// Reconfigure makes the Manager run exactly servers (keyed by name), as a reload of the config
// asks. A new server gets a supervisor, which dials on its own goroutine as at start
// (docs/design.md#rule-13); a stdio server's command line waits for the owner's approval as ever. A
// server no longer listed is stopped. A server whose entry changed (see config.Server.ChangedKeys)
// is stopped and started again with the new entry, so a changed command line is a new one to
// approve; a change of allow_tools alone applies at once, its session untouched. An unchanged
// server is not touched: its session and the calls in flight on it go on; one whose command was
// not found looks for it again at once. Reconfigure returns once
// every stopped server has closed its session (and a stdio server's process has exited). Calls are
// serialized; after Close it does nothing. It changes no allowlist row: a stopped server withdraws
// nothing (docs/design.md#rule-10).
func (m *Manager) Reconfigure(servers map[string]config.Server) Reconfigured {
	m.reconfiguring.Lock()
	defer m.reconfiguring.Unlock()
	cur := m.servers.Load()
	var res Reconfigured
	var stopping []*supervisor
	keep := map[string]bool{}
	for _, name := range slices.Sorted(maps.Keys(servers)) {
		s, ok := cur.byName[name]
		if !ok {
			res.Added = append(res.Added, name)
			continue
		}
		// The session keeps the entry it started with; allow_tools is the running one, which an
		// earlier reload may have changed.
		running := s.cfg
		running.AllowTools = cur.allow[name]
		switch keys := running.ChangedKeys(servers[name]); {
		case len(keys) == 0:
			keep[name] = true
			if s.commandMissing.Load() {
				// The owner may have installed it: a reload is how they say so.
				s.signal()
			}
		case slices.Equal(keys, []string{"allow_tools"}):
			keep[name] = true
			res.Updated = append(res.Updated, name)
		default:
			res.Restarted = append(res.Restarted, name)
			stopping = append(stopping, s)
		}
	}
	for _, name := range cur.names {
		if _, ok := servers[name]; !ok {
			res.Removed = append(res.Removed, name)
			stopping = append(stopping, cur.byName[name])
		}
	}
	m.mu.Lock()
	closed := m.closed
	m.mu.Unlock()
	if closed {
		return Reconfigured{}
	}
	m.stopAll(stopping)

	m.mu.Lock()
	defer m.notifyChange()
	defer m.mu.Unlock()
	next := newSupervisorSet()
	var started []*supervisor
	for _, name := range slices.Sorted(maps.Keys(servers)) {
		cfg := withName(name, servers[name])
		if keep[name] {
			next.add(cur.byName[name])
			next.allow[name] = slices.Clone(cfg.AllowTools)
			continue
		}
		s := newSupervisor(m, name, cfg)
		next.add(s)
		started = append(started, s)
	}
	m.servers.Store(next)
	if m.started && !m.closed {
		for _, s := range started {
			m.start(s, 0)
		}
	}
	return res
}

// withName returns cfg with its Name set to the name it is listed under.
func withName(name string, cfg config.Server) config.Server {
	cfg.Name = name
	return cfg
}
