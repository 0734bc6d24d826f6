package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"time"

	"maven/app/activity"
	"maven/app/allowlist"
	"maven/app/approval"
	"maven/app/auth"
	"maven/app/bearer"
	"maven/app/clients"
	"maven/app/config"
	"maven/app/ipc"
	"maven/app/limits"
	"maven/app/mcp"
	"maven/app/metrics"
	"maven/app/pending"
	"maven/app/reveal"
	"maven/app/vault"
)

// daemon holds the running services the IPC methods and handlers read.
type daemon struct {
	started time.Time
	listen  string
	dataDir string // absolute
	// cfg is the config as the daemon started, its listen address resolved: what needs a
	// restart (origins) stays true of it. The servers and tools a reload changes are reload's.
	cfg      config.Config
	reload   *reloader
	commands *approval.Service // stdio command lines and their approvals
	tools    *allowlist.Service
	limits   *limits.Service // the owner's limits on the rows' arguments, which `tools` shows
	auth     *auth.Service
	mcp      *mcp.Manager
	vault    *vault.Gate
	tokens   *bearer.Tokens
	// metricsTokens opens GET /metrics when the config enables it.
	metricsTokens *bearer.Tokens
	events        *activity.Log // what `events` reads
	// pending are the calls waiting for the owner's approval: `approvals` lists them.
	pending *pending.Service
	// clients are the agents' clients: `maven client` adds, lists and revokes them.
	clients *clients.Service
	// problems are what the config holds that the daemon started despite.
	problems *config.Problems
	// backup writes a consistent copy of the database to a path (db.Backup).
	backup func(ctx context.Context, path string) (int64, error)
	log    *slog.Logger
}

// Locked reports whether secrets are sealed. Without a vault there is nothing to unlock.
func (d *daemon) Locked() bool { return d.vault.Locked() }

// ipcMethods is the whole IPC surface. There is deliberately no method that enables or calls a
// tool, or approves a pending call: those need the owner's passkey on the web page.
func (d *daemon) ipcMethods() map[string]ipc.HandlerFunc {
	return map[string]ipc.HandlerFunc{
		"status":               d.ipcStatus,
		"tools":                d.ipcTools,
		"propose_tool":         d.ipcProposeTool,
		"setup_link":           d.ipcSetupLink,
		"mcp_servers":          d.ipcMCPServers,
		"voice_token_rotate":   d.ipcVoiceTokenRotate,
		"metrics_token_rotate": d.ipcMetricsTokenRotate,
		"lock":                 d.ipcLock,
		"secret_set":           d.ipcSecretSet,
		"events":               d.ipcEvents,
		"secret_list":          d.ipcSecretList,
		"backup":               d.ipcBackup,
		"reload":               d.reload.ipcReload,
		"approvals":            d.ipcApprovals,
		"clients":              d.ipcClients,
		"client_add":           d.ipcClientAdd,
		"client_revoke":        d.ipcClientRevoke,
	}
}

// toolResult is one row of the `tools` IPC result (docs/design.md#ipc).
type toolResult struct {
	ID          int64     `json:"id"`
	Name        string    `json:"name"`
	Cmd         []string  `json:"cmd"`
	Scope       string    `json:"scope"`
	State       string    `json:"state"`
	Destructive bool      `json:"destructive"`
	ReadOnly    bool      `json:"read_only"`
	Fingerprint *string   `json:"fingerprint"`
	Provenance  string    `json:"provenance"`
	UpdatedAt   time.Time `json:"updated_at"`
	// Limits are the owner's limits on its arguments, when any were saved
	// (docs/design.md#rule-33).
	Limits *toolLimits `json:"limits,omitempty"`
}

// toolLimits are a row's saved limits as `tools` shows them: each limited property's JSON
// Schema keywords, whether calls within them run without asking, whether they are in force
// (a redefinition voids them), the fingerprint they were saved for, when and by whom.
type toolLimits struct {
	Properties       map[string]map[string]any `json:"properties"`
	RunWithoutAsking bool                      `json:"run_without_asking"`
	InForce          bool                      `json:"in_force"`
	Fingerprint      string                    `json:"fingerprint"`
	SavedAt          time.Time                 `json:"saved_at"`
	SavedBy          string                    `json:"saved_by"`
}

// withLimits is r with t's saved limits.
func (r toolResult) withLimits(t allowlist.Tool, saved limits.Saved) toolResult {
	props := make(map[string]map[string]any, len(saved.Set.Props))
	for name, l := range saved.Set.Props {
		props[name] = l.Keywords()
	}
	r.Limits = &toolLimits{Properties: props, RunWithoutAsking: saved.Set.RunUnasked, InForce: saved.InForce(t),
		Fingerprint: saved.Fingerprint, SavedAt: saved.SavedAt, SavedBy: saved.SavedBy}
	return r
}

func toToolResult(t allowlist.Tool) toolResult {
	r := toolResult{ID: t.ID, Name: t.Name, Cmd: t.Cmd, Scope: t.Scope, State: string(t.State),
		Destructive: t.Destructive, ReadOnly: t.ReadOnly, Provenance: t.Provenance, UpdatedAt: t.UpdatedAt}
	if t.Fingerprint != "" {
		r.Fingerprint = &t.Fingerprint
	}
	return r
}

// toolsParams are the `tools` IPC params; State, if set, keeps the rows in that state.
type toolsParams struct {
	State string `json:"state,omitempty"`
}

func (d *daemon) ipcTools(ctx context.Context, params json.RawMessage) (any, error) {
	var p toolsParams
	if err := ipc.DecodeParams(params, &p); err != nil {
		return nil, err
	}
	var filter allowlist.Filter
	if p.State != "" {
		st := allowlist.State(p.State)
		if !slices.Contains(allowlist.States(), st) {
			return nil, &ipc.Error{Code: ipc.InvalidParams, Message: fmt.Sprintf("state is one of %s, not %q", strings.Join(stateNames(), ", "), p.State)}
		}
		filter.States = []allowlist.State{st}
	}
	rows, err := d.tools.List(ctx, filter)
	if err != nil {
		return nil, err
	}
	ids := make([]int64, len(rows))
	for i, r := range rows {
		ids[i] = r.ID
	}
	saved, err := d.limits.Limits(ctx, ids)
	if err != nil {
		return nil, err
	}
	out := make([]toolResult, len(rows))
	for i, r := range rows {
		out[i] = toToolResult(r)
		// A save of no limits cleared them: nothing to show.
		if l, ok := saved[r.ID]; ok && !l.Set.Empty() {
			out[i] = out[i].withLimits(r, l)
		}
	}
	return out, nil
}

// proposeParams are the `propose_tool` IPC params.
type proposeParams struct {
	Name string   `json:"name"`
	Argv []string `json:"argv"`
}

func (d *daemon) ipcProposeTool(ctx context.Context, params json.RawMessage) (any, error) {
	var p proposeParams
	if err := ipc.DecodeParams(params, &p); err != nil {
		return nil, err
	}
	t, _, err := d.tools.ProposeTool(ctx, allowlist.Proposal{
		Name: p.Name, Cmd: p.Argv, Scope: allowlist.ScopeLocal, Source: allowlist.SourceCLI,
		Provenance: "proposed with maven propose", Actor: "cli",
	})
	if errors.Is(err, allowlist.ErrInvalid) {
		return nil, &ipc.Error{Code: ipc.InvalidParams, Message: err.Error()}
	}
	if err != nil {
		return nil, err
	}
	res := proposeResult{toolResult: toToolResult(t)}
	if msg, better := config.CommandProblem(p.Argv[0], p.Argv[1:], "", d.reload.getenv("PATH")); msg != "" {
		if len(better) > 0 {
			msg += ": maven propose " + t.Name + " -- " + reveal.CommandLine(better)
		}
		res.Warnings = []string{msg}
	}
	return res, nil
}

// proposeResult is the `propose_tool` IPC result: the row, and why its command can never run
// as written, if it cannot (config.CommandProblem). It is proposed all the same: the program may
// be installed later.
type proposeResult struct {
	toolResult
	Warnings []string `json:"warnings,omitempty"`
}

// setupLinkResult is the `setup_link` IPC result.
type setupLinkResult struct {
	URL       string    `json:"url"`
	ExpiresAt time.Time `json:"expires_at"`
}

// ipcSetupLink issues a fresh one-time setup link: whoever can reach the socket (mode 0600) can
// already act as the daemon's user, so it is how the owner recovers from a lost passkey.
func (d *daemon) ipcSetupLink(ctx context.Context, _ json.RawMessage) (any, error) {
	link, err := d.auth.NewSetupLink(ctx, "cli")
	if err != nil {
		return nil, err
	}
	return setupLinkResult{URL: d.auth.SetupURL(link), ExpiresAt: link.ExpiresAt.UTC()}, nil
}

// tokenResult is the result of the token rotation IPC methods: the only time a token is shown.
type tokenResult struct {
	Token string `json:"token"`
}

func (d *daemon) ipcVoiceTokenRotate(ctx context.Context, _ json.RawMessage) (any, error) {
	token, err := d.tokens.Rotate(ctx)
	if err != nil {
		return nil, err
	}
	return tokenResult{Token: token}, nil
}

func (d *daemon) ipcMetricsTokenRotate(ctx context.Context, _ json.RawMessage) (any, error) {
	token, err := d.metricsTokens.Rotate(ctx)
	if err != nil {
		return nil, err
	}
	return tokenResult{Token: token}, nil
}

// gauges are the metrics read at each scrape: rows by state, each server's state, the lock.
func (d *daemon) gauges(ctx context.Context) []metrics.Sample {
	var out []metrics.Sample
	counts, err := d.tools.CountByState(ctx, allowlist.Filter{})
	if err == nil {
		for _, st := range allowlist.States() {
			out = append(out, metrics.Sample{Name: "maven_tools", Help: "Allowlist rows by state.",
				Labels: []metrics.Label{{Name: "state", Value: string(st)}}, Value: float64(counts[st])})
		}
	}
	for _, s := range d.mcp.Status() {
		for _, st := range mcp.States() {
			v := 0.0
			if s.State == st {
				v = 1
			}
			out = append(out, metrics.Sample{Name: "maven_mcp_server_state", Help: "1 for the state each MCP server is in.",
				Labels: []metrics.Label{{Name: "server", Value: s.Name}, {Name: "state", Value: string(st)}}, Value: v})
		}
	}
	locked := 0.0
	if d.Locked() {
		locked = 1
	}
	return append(out, metrics.Sample{Name: "maven_locked", Help: "1 while the daemon is locked.", Value: locked})
}
