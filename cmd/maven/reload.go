package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"maven/app/allowlist"
	"maven/app/config"
	"maven/app/ipc"
	"maven/app/mcp"
	"maven/app/oauth"
	"maven/app/reveal"
)

// reloader reads the config again on `maven reload` and SIGHUP and applies it to the running
// daemon: MCP servers are added, restarted and removed (mcp.Manager.Reconfigure), the rows of
// removed servers are withdrawn, the local tools are synced; keys read only at start are
// reported as needing a restart. A config with errors is refused whole and the running one
// stays. One reload runs at a time.
type reloader struct {
	flags    serveFlags
	file     string // the config file, absolute
	getenv   func(string) string
	configs  *configSync
	servers  *mcp.Manager
	forget   func(server string) // drops what discovery remembers of a server's last list
	problems *config.Problems
	log      *slog.Logger
	now      func() time.Time

	// loaded is set while the running config came from the file, not the defaults.
	loaded atomic.Bool

	mu sync.Mutex // held for a whole reload
	// running is the config the daemon runs: as read at start (before the listen address was
	// resolved), with what reloads applied since.
	running atomic.Pointer[config.Config]
}

// newReloader returns the reloader of a daemon that started with the config started, read from
// a file (fromFile) or the defaults. Once started from a file, a file gone missing is an error to
// refuse, not the defaults: an editor's mishap must not withdraw every server's rows.
func newReloader(flags serveFlags, getenv func(string) string, started config.Config, fromFile bool, configs *configSync,
	servers *mcp.Manager, forget func(string)) *reloader {
	flags.configExplicit = flags.configExplicit || fromFile
	file := configFile(flags)
	r := &reloader{flags: flags, file: file, getenv: getenv, configs: configs, servers: servers, forget: forget,
		problems: configs.problems, log: configs.log, now: time.Now}
	r.running.Store(&started)
	r.loaded.Store(fromFile)
	return r
}

// source returns the config file and whether the running config came from it, as of the last
// reload applied.
func (r *reloader) source() (path string, loaded bool) { return r.file, r.loaded.Load() }

// config returns the config the daemon runs.
func (r *reloader) config() config.Config { return *r.running.Load() }

// secretUsers maps each secret the running config refers to onto the servers that use it.
func (r *reloader) secretUsers() map[string][]string { return r.config().SecretUsers() }

// reloadResult is the `reload` IPC result.
type reloadResult struct {
	// Applied is false when the config was refused: Errors say why, and nothing changed.
	Applied bool             `json:"applied"`
	At      time.Time        `json:"at"`
	File    string           `json:"file"` // the config file read
	Errors  []config.Problem `json:"errors"`
	config.Changes
	// Problems are what the applied config holds that the daemon runs despite (as `status`
	// lists them): its warnings, a local tool that could not be proposed.
	Problems []config.Problem `json:"problems"`
}

// reload reads the config and applies it, or refuses it. The error is for what went wrong
// applying a good config (the database); a bad config is a result with Applied false.
func (r *reloader) reload(ctx context.Context) (reloadResult, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	res := reloadResult{At: r.now().UTC(), File: r.file, Errors: []config.Problem{}, Changes: config.NoChanges(),
		Problems: []config.Problem{}}
	next, fromFile, err := loadConfig(r.flags, r.getenv)
	if err != nil {
		res.Errors = config.ProblemsOf(err)
		r.problems.Refuse(config.Refusal{At: res.At, File: res.File, Errors: res.Errors})
		r.log.Error("config refused: the running config stays; fix the file and reload again", "file", res.File, "errors", len(res.Errors))
		for _, p := range res.Errors {
			r.log.Error("config: "+p.Msg, "key", p.Key)
		}
		return res, nil
	}
	running := r.config()
	res.Changes = config.Diff(running, next)
	applied := next.KeepRestartKeys(running)
	// Stopped before their rows are withdrawn: a list reconciled meanwhile would propose them
	// again.
	done := r.servers.Reconfigure(applied.MCPServers)
	for _, name := range done.Removed {
		r.forget(name)
	}
	// The servers run as applied whatever follows; a failure below is retried by the next
	// reload, which syncs everything again.
	r.running.Store(&applied)
	r.loaded.Store(fromFile)
	if err := r.configs.apply(ctx, applied, fromFile); err != nil {
		return reloadResult{}, err
	}
	// From now on a file gone missing is refused, as if it had been read at start.
	r.flags.configExplicit = r.flags.configExplicit || fromFile
	res.Applied, res.Problems = true, r.problems.List()
	r.logApplied(res)
	return res, nil
}

// logApplied logs what a reload changed.
func (r *reloader) logApplied(res reloadResult) {
	c := res.Changes
	changed := make([]string, len(c.Servers.Changed))
	for i, s := range c.Servers.Changed {
		changed[i] = s.Name + " (" + strings.Join(s.Keys, ", ") + ")"
	}
	r.log.Info("config reloaded", "file", res.File, "servers_added", c.Servers.Added, "servers_changed", changed,
		"servers_removed", c.Servers.Removed, "tools_added", c.Tools.Added, "tools_changed", c.Tools.Changed,
		"tools_removed", c.Tools.Removed)
	if len(c.NeedsRestart) > 0 {
		r.log.Warn("config: these keys changed but apply only after a restart; the rest of the reload is applied",
			"keys", c.NeedsRestart)
	}
}

// onHangup reloads on every SIGHUP until ctx is done.
func (r *reloader) onHangup(ctx context.Context, hup <-chan os.Signal) {
	for {
		select {
		case <-ctx.Done():
			return
		case <-hup:
			r.log.Info("SIGHUP: reloading the config", "file", r.file)
			if _, err := r.reload(ctx); err != nil {
				r.log.Error("reload failed", "err", err)
			}
		}
	}
}

// ipcReload is the `reload` IPC method.
func (r *reloader) ipcReload(ctx context.Context, params json.RawMessage) (any, error) {
	if err := ipc.DecodeParams(params, &struct{}{}); err != nil {
		return nil, err
	}
	return r.reload(ctx)
}

// configSync brings what the daemon keeps in line with a config, at start and on each reload.
type configSync struct {
	tools    *allowlist.Service
	signIns  *oauth.Service
	problems *config.Problems // the config's problems, as /tools and `status` show them
	log      *slog.Logger
}

// apply brings the allowlist in line with cfg: its local commands are proposed (and those it
// dropped withdrawn), and, when cfg was read from a file, the rows of MCP servers it no longer
// names are withdrawn and their sealed OAuth sign-ins forgotten; the defaults, which run when
// there is no file, remove nothing. Approvals of command lines are kept: they are per digest,
// and a server put back with the same command line starts without asking again. It records
// cfg's problems. At start it runs before any server is dialled; on a reload, after the removed
// servers have stopped.
func (c *configSync) apply(ctx context.Context, cfg config.Config, fromFile bool) error {
	if err := syncConfigTools(ctx, c.tools, cfg, c.problems, c.log); err != nil {
		return err
	}
	if !fromFile {
		return nil
	}
	servers := make([]string, 0, len(cfg.MCPServers))
	for name := range cfg.MCPServers {
		servers = append(servers, name)
	}
	withdrawn, err := c.tools.WithdrawRemovedServers(ctx, servers)
	if err != nil {
		return err
	}
	for _, name := range withdrawn {
		c.log.Info("the config no longer names this MCP server: its tools are withdrawn", "mcp_server", name)
	}
	if _, err := c.signIns.ForgetRemoved(ctx, servers); err != nil {
		return fmt.Errorf("forget the sign-ins of removed servers: %w", err)
	}
	return nil
}

// cliReload is `maven reload`: it prints what changed, or the errors of a refused config and
// exits 1.
func cliReload(ctx context.Context, in *invocation, args []string) error {
	f, rest, _, err := in.parseClient("reload", args, true)
	if err != nil {
		return err
	}
	if len(rest) > 0 {
		return usagef("reload", "reload takes no arguments")
	}
	var res reloadResult
	if err := f.call(ctx, "reload", nil, &res); err != nil {
		return err
	}
	if f.json {
		if err := writeJSON(in.stdout, res); err != nil {
			return err
		}
	} else if res.Applied {
		printReload(in.stdout, res)
	}
	if !res.Applied {
		return refusedError(res)
	}
	return nil
}

// refusedError is the error of a refused config: every error, one a line.
func refusedError(res reloadResult) error {
	var b strings.Builder
	fmt.Fprintf(&b, "the config in %s was refused and the running config stays; fix ", oneLine(res.File))
	if len(res.Errors) == 1 {
		b.WriteString("this error")
	} else {
		fmt.Fprintf(&b, "these %d errors", len(res.Errors))
	}
	b.WriteString(" and reload again:")
	for _, p := range res.Errors {
		b.WriteString("\n  ")
		b.WriteString(problemLine(p))
	}
	return fmt.Errorf("%s", b.String())
}

// printReload prints what an applied reload changed.
func printReload(w io.Writer, res reloadResult) {
	c := res.Changes
	if c.None() {
		fmt.Fprintf(w, "config reloaded from %s: nothing changed\n", oneLine(res.File))
	} else {
		fmt.Fprintf(w, "config reloaded from %s\n", oneLine(res.File))
	}
	changed := make([]string, len(c.Servers.Changed))
	for i, s := range c.Servers.Changed {
		changed[i] = s.Name + " (" + strings.Join(s.Keys, ", ") + ")"
	}
	for _, l := range []struct {
		what  string
		names []string
		after string
	}{
		{"servers added", c.Servers.Added, ""},
		{"servers changed", changed, ""},
		{"servers removed", c.Servers.Removed, " (stopped; their tools are withdrawn)"},
		{"tools added", c.Tools.Added, ""},
		{"tools changed", c.Tools.Changed, ""},
		{"tools removed", c.Tools.Removed, " (withdrawn)"},
		{"needs a restart", c.NeedsRestart, " (changed, but read only at start; the rest is applied)"},
	} {
		if len(l.names) > 0 {
			fmt.Fprintf(w, "  %-16s %s%s\n", l.what+":", oneLine(strings.Join(l.names, ", ")), l.after)
		}
	}
	if len(c.Servers.Added)+len(c.Servers.Changed) > 0 {
		fmt.Fprintln(w, "New and changed servers connect on their own; a stdio command line you have not approved yet waits for you on /tools.")
	}
	for _, p := range res.Problems {
		fmt.Fprintf(w, "config %s: %s\n", p.Level, problemLine(p))
	}
}

// problemLine is a config problem on one line: "KEY: MESSAGE".
func problemLine(p config.Problem) string {
	if p.Key == "" {
		return oneLine(p.Msg)
	}
	return oneLine(p.Key) + ": " + oneLine(p.Msg)
}

// oneLine shows s on one line, its hidden characters spelled out.
func oneLine(s string) string { return reveal.OneLine(s) }
