package config

import (
	"errors"
	"maps"
	"reflect"
	"slices"
	"strconv"
	"strings"
)

// Changes is what a config read again changes against the one the daemon runs: the servers and
// local tools a reload adds, changes and removes, and the keys it cannot apply without a restart.
type Changes struct {
	Servers ServerChanges `json:"servers"`
	Tools   ToolChanges   `json:"tools"`
	// NeedsRestart names the top-level keys that changed but are read only at start (see
	// restartKeys); the rest of the reload applies without them.
	NeedsRestart []string `json:"needs_restart"`
}

// ServerChanges are the MCP servers a reload adds, changes and removes, each sorted by name.
type ServerChanges struct {
	Added   []string       `json:"added"`
	Changed []ServerChange `json:"changed"`
	Removed []string       `json:"removed"`
}

// ServerChange is one server whose entry changed, with the keys that did.
type ServerChange struct {
	Name string   `json:"name"`
	Keys []string `json:"keys"` // see Server.ChangedKeys
}

// ToolChanges are the local tools a reload adds, changes (a new argv) and removes, by name.
type ToolChanges struct {
	Added   []string `json:"added"`
	Changed []string `json:"changed"`
	Removed []string `json:"removed"`
}

// None reports whether nothing changed.
func (c Changes) None() bool {
	return len(c.Servers.Added)+len(c.Servers.Changed)+len(c.Servers.Removed)+
		len(c.Tools.Added)+len(c.Tools.Changed)+len(c.Tools.Removed)+len(c.NeedsRestart) == 0
}

// restartKey is a top-level key read only when the daemon starts: what it sets is wired into
// the listener, the passkey ceremonies, the session cookies or the services built at start.
type restartKey struct {
	key  string
	same func(a, b Config) bool
	keep func(dst *Config, src Config) // copies the key's value from src
}

// restartKeys are every key a reload cannot apply. refresh_interval, step_up_window, voice,
// notify and agents are among them: each is copied into a service (the MCP supervisors' refresh
// schedules, the step-up grants, the voice turn limiter and wake words, the notifiers, the
// pending calls' wait and expiry) that offers no safe way to change it while it runs.
var restartKeys = []restartKey{
	{"listen", func(a, b Config) bool { return a.Listen == b.Listen }, func(d *Config, s Config) { d.Listen = s.Listen }},
	{"rp_id", func(a, b Config) bool { return a.RPID == b.RPID }, func(d *Config, s Config) { d.RPID = s.RPID }},
	{"origins", func(a, b Config) bool { return slices.Equal(a.Origins, b.Origins) }, func(d *Config, s Config) {
		d.Origins, d.originsDerived = slices.Clone(s.Origins), s.originsDerived
	}},
	{"tls_cert", func(a, b Config) bool { return a.TLSCert == b.TLSCert }, func(d *Config, s Config) { d.TLSCert = s.TLSCert }},
	{"tls_key", func(a, b Config) bool { return a.TLSKey == b.TLSKey }, func(d *Config, s Config) { d.TLSKey = s.TLSKey }},
	{"trusted_proxies", func(a, b Config) bool { return slices.Equal(a.TrustedProxies, b.TrustedProxies) }, func(d *Config, s Config) {
		d.TrustedProxies = slices.Clone(s.TrustedProxies)
	}},
	{"metrics", func(a, b Config) bool { return a.Metrics == b.Metrics }, func(d *Config, s Config) { d.Metrics = s.Metrics }},
	{"refresh_interval", func(a, b Config) bool { return a.RefreshInterval == b.RefreshInterval }, func(d *Config, s Config) {
		d.RefreshInterval = s.RefreshInterval
	}},
	{"step_up_window", func(a, b Config) bool { return a.StepUpWindow == b.StepUpWindow }, func(d *Config, s Config) {
		d.StepUpWindow = s.StepUpWindow
	}},
	{"voice", func(a, b Config) bool { return reflect.DeepEqual(a.Voice, b.Voice) }, func(d *Config, s Config) { d.Voice = s.Voice }},
	{"notify", func(a, b Config) bool { return reflect.DeepEqual(a.Notify, b.Notify) }, func(d *Config, s Config) { d.Notify = s.Notify }},
	{"agents", func(a, b Config) bool { return a.Agents == b.Agents }, func(d *Config, s Config) { d.Agents = s.Agents }},
}

// NoChanges is Changes with every list empty (not nil: JSON readers get []).
func NoChanges() Changes {
	return Changes{
		Servers:      ServerChanges{Added: []string{}, Changed: []ServerChange{}, Removed: []string{}},
		Tools:        ToolChanges{Added: []string{}, Changed: []string{}, Removed: []string{}},
		NeedsRestart: []string{},
	}
}

// Diff compares next, the config as read again, with running, the one the daemon runs.
func Diff(running, next Config) Changes {
	c := NoChanges()
	for _, k := range restartKeys {
		if !k.same(running, next) {
			c.NeedsRestart = append(c.NeedsRestart, k.key)
		}
	}
	for _, name := range slices.Sorted(maps.Keys(next.MCPServers)) {
		old, ok := running.MCPServers[name]
		if !ok {
			c.Servers.Added = append(c.Servers.Added, name)
		} else if keys := old.ChangedKeys(next.MCPServers[name]); len(keys) > 0 {
			c.Servers.Changed = append(c.Servers.Changed, ServerChange{Name: name, Keys: keys})
		}
	}
	for _, name := range slices.Sorted(maps.Keys(running.MCPServers)) {
		if _, ok := next.MCPServers[name]; !ok {
			c.Servers.Removed = append(c.Servers.Removed, name)
		}
	}
	was := toolsByName(running.Tools)
	now := toolsByName(next.Tools)
	for _, name := range slices.Sorted(maps.Keys(now)) {
		old, ok := was[name]
		switch {
		case !ok:
			c.Tools.Added = append(c.Tools.Added, name)
		case !slices.Equal(old, now[name]):
			c.Tools.Changed = append(c.Tools.Changed, name)
		}
	}
	for _, name := range slices.Sorted(maps.Keys(was)) {
		if _, ok := now[name]; !ok {
			c.Tools.Removed = append(c.Tools.Removed, name)
		}
	}
	return c
}

func toolsByName(tools []Tool) map[string][]string {
	out := make(map[string][]string, len(tools))
	for _, t := range tools {
		out[t.Name] = t.Argv
	}
	return out
}

// KeepRestartKeys returns c with the keys a reload cannot apply set as running has them: the
// config a daemon running with running runs once it reloaded c.
func (c Config) KeepRestartKeys(running Config) Config {
	for _, k := range restartKeys {
		k.keep(&c, running)
	}
	return c
}

// ChangedKeys names the keys of the server's entry that differ in next, in the order a config
// lists them; a difference outside them (a key added to Server later) is "other settings".
// Nil and empty lists and maps are the same. None: the server is unchanged.
func (s Server) ChangedKeys(next Server) []string {
	var keys []string
	add := func(key string, same bool) {
		if !same {
			keys = append(keys, key)
		}
	}
	add("type", s.Type == next.Type && s.TypeGuessed == next.TypeGuessed)
	add("command", s.Command == next.Command)
	add("args", slices.Equal(s.Args, next.Args))
	add("env", maps.Equal(s.Env, next.Env))
	add("cwd", s.Cwd == next.Cwd)
	add("url", s.URL == next.URL)
	add("headers", maps.Equal(s.Headers, next.Headers))
	add("oauth", reflect.DeepEqual(s.OAuth, next.OAuth))
	add("allow_tools", slices.Equal(s.AllowTools, next.AllowTools))
	add("disabled", s.Disabled == next.Disabled)
	add("other settings", reflect.DeepEqual(s.otherSettings(), next.otherSettings()))
	return keys
}

// otherSettings is the server without the fields ChangedKeys compares one by one, nor its name.
func (s Server) otherSettings() Server {
	s.Name, s.Type, s.TypeGuessed, s.Command, s.Args, s.Env, s.Cwd = "", "", false, "", nil, nil, ""
	s.URL, s.Headers, s.OAuth, s.AllowTools, s.Disabled = "", nil, nil, nil, false
	return s
}

// ProblemsOf lists the errors of a config that could not be loaded, one Problem each at level
// error, in the order of the file; an error that is no *Error is one Problem without a key.
func ProblemsOf(err error) []Problem {
	var es Errors
	if errors.As(err, &es) {
		out := make([]Problem, len(es))
		for i, e := range es {
			out[i] = e.problem()
		}
		return out
	}
	var e *Error
	if errors.As(err, &e) {
		return []Problem{e.problem()}
	}
	return []Problem{{Msg: err.Error(), Level: LevelError}}
}

// problem is the error as a Problem. A message that quotes its key ("unknown key "x"") drops
// the quote: a Problem is shown as "KEY: MESSAGE".
func (e *Error) problem() Problem {
	msg := e.Msg
	if e.keyInMsg {
		msg = strings.Replace(msg, " "+strconv.Quote(e.Key), "", 1)
	}
	return Problem{Key: e.Key, Msg: msg, Level: LevelError}
}
