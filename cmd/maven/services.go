package main

import (
	"context"
	"log/slog"
	"net/http"
	"time"

	"github.com/uptrace/bun"

	"maven/app/activity"
	"maven/app/agents"
	"maven/app/allowlist"
	"maven/app/approval"
	"maven/app/auth"
	"maven/app/bearer"
	"maven/app/clients"
	"maven/app/config"
	"maven/app/limits"
	"maven/app/mcp"
	"maven/app/metrics"
	"maven/app/notify"
	"maven/app/oauth"
	"maven/app/pending"
	"maven/app/phrases"
	"maven/app/runner"
	"maven/app/vault"
	"maven/app/voice"
	"maven/db"
)

// startup is what serve knows before the services exist.
type startup struct {
	flags    serveFlags
	getenv   func(string) string
	asRead   config.Config // the config as read: reloads compare with it
	cfg      config.Config // the config that runs: its listen address resolved
	fromFile bool          // the config came from its file (not the defaults)
	listen   string        // the address listened on
	log      *slog.Logger
}

// services are the daemon's app services, built from its database and config by openServices:
// the daemon the IPC methods read, and what only the web app and voice need.
type services struct {
	*daemon
	registry    *metrics.Registry // nil with "metrics": false
	signIns     *oauth.Service
	credentials *http.Transport // every request that carries a credential (credentialTransport)
	book        *phrases.Service
	voice       *voice.Service
	runner      *runner.Executor   // the one run path: voice's turns, agents' calls and approved calls
	agents      *agents.Service    // the MCP server agents reach
	notify      *notify.Dispatcher // tells the owner of calls waiting for approval
	closers     []func()           // what close ends, last first
}

// openServices builds the daemon's app services over bdb, in the order each needs the others:
// the allowlist and the MCP servers (openMCP), the owner's passkeys and tokens, the activity
// feed's recorders, the notifiers, voice (openVoice); and what a lock and an unlock do to each.
// Nothing is dialled yet. An error closes what it opened; else the caller closes it.
func openServices(ctx context.Context, st startup, bdb *bun.DB) (_ *services, err error) {
	s := &services{daemon: &daemon{started: time.Now(), cfg: st.cfg, listen: st.listen, dataDir: st.flags.dataDir,
		log: st.log, problems: &config.Problems{},
		backup: func(ctx context.Context, path string) (int64, error) { return db.Backup(ctx, bdb, path) }}}
	defer func() {
		if err != nil {
			s.close()
		}
	}()
	if err := s.openMCP(ctx, st, bdb); err != nil {
		return nil, err
	}
	// The vault: a daemon that has one starts locked, and nothing that needs a secret runs until
	// the owner unlocks from /unlock. The gate is the one place that knows; unlocking only hands
	// the manager a lookup (SetSecrets never blocks), so no dial happens on the unlock's path.
	s.vault.OnUnlock(s.mcp.SetSecrets)
	s.vault.OnLock(func() { s.mcp.SetSecrets(nil) })
	s.vault.OnLock(s.signIns.EndSignIns)
	if s.tokens, err = bearer.New(ctx, db.NewSettingsStore(bdb), "voice"); err != nil {
		return nil, err
	}
	if s.metricsTokens, err = bearer.New(ctx, db.NewSettingsStore(bdb), "metrics"); err != nil {
		return nil, err
	}
	// The owner's passkeys, setup links and step-ups; their changes go to the activity feed.
	if s.auth, err = auth.New(db.NewAuthStore(bdb), auth.Config{
		RPID: st.cfg.RPID, Origins: st.cfg.Origins, StepUpWindow: st.cfg.StepUpWindow, Logger: st.log, Activity: s.events,
	}); err != nil {
		return nil, err
	}
	// The agents' clients and Maven's authorization server (docs/design.md#rule-29); what
	// expires of them is swept while the daemon runs.
	if s.clients, err = clients.New(ctx, db.NewClientStore(bdb), db.NewSettingsStore(bdb), clients.Options{
		Origins: st.cfg.Origins, Activity: s.events, Logger: st.log,
	}); err != nil {
		return nil, err
	}
	sweep, stopSweep := context.WithCancel(ctx)
	go s.clients.Run(sweep, 5*time.Minute)
	s.closers = append(s.closers, stopSweep)
	startActivity(ctx, s.events, s.vault, s.mcp, st.log)
	// The notifiers (docs/design.md#rule-30): the VAPID keys are made at the first start; Home
	// Assistant's token is a secret, sent through the transport a lock empties.
	if s.notify, err = notify.New(ctx, db.NewPushStore(bdb), notify.Options{Config: st.cfg.Notify, Origins: st.cfg.Origins,
		CredentialTransport: s.credentials, Activity: s.events, Logger: st.log}); err != nil {
		return nil, err
	}
	s.vault.OnUnlock(s.notify.SetSecrets)
	s.vault.OnLock(func() { s.notify.SetSecrets(nil) })
	if err := s.openPending(ctx, st, bdb); err != nil {
		return nil, err
	}
	s.openVoice(st, bdb)
	if err := s.openAgents(ctx, st); err != nil {
		return nil, err
	}
	// Locking also drops pending voice confirms and every step-up grant, and collects what the
	// sessions that used secrets leave behind.
	s.vault.OnLock(s.voice.CancelPending)
	s.vault.OnLock(s.auth.ForgetStepUps)
	release := newLockRelease(s.credentials)
	s.vault.OnLock(release.start)
	return s, nil
}

// openMCP builds the allowlist and what discovers and calls the MCP servers' tools: the
// reconciler (discovery only proposes rows), the approvals of command lines, the vault's gate,
// OAuth, and the manager with one supervisor per configured server, which serve starts. The
// rows and sign-ins of servers the config no longer names go before any server is dialled.
func (s *services) openMCP(ctx context.Context, st startup, bdb *bun.DB) error {
	s.tools = allowlist.NewService(db.NewToolStore(bdb), time.Now)
	reconciler := mcp.NewToolReconciler(s.tools, time.Now, st.log)
	if st.cfg.Metrics {
		s.registry = metrics.New()
		reconciler.OnReconcile(func(server string, took time.Duration) {
			s.registry.Observe("maven_mcp_reconcile_duration_seconds", "Time to reconcile one complete tool list.", took,
				metrics.Label{Name: "server", Value: server})
		})
	}
	// A stdio server's command line starts only once the owner approved it on /tools, behind a
	// step-up (docs/design.md#rule-21 and docs/design.md#rule-25); its supervisor asks before every
	// start.
	s.commands = approval.NewService(db.NewApprovalStore(bdb), time.Now)
	gate, err := vault.NewGate(ctx, vault.New(db.NewVaultStore(bdb), st.cfg.RPID, time.Now), st.log)
	if err != nil {
		return err
	}
	s.vault = gate
	// OAuth: a remote server that refuses Maven waits for the owner to sign in from its card;
	// tokens are sealed in the vault, and sign-ins recorded in the activity feed.
	s.events = activity.New(db.NewActivityStore(bdb), time.Now)
	// Every request that carries a credential (a server's configured headers, its OAuth token,
	// the exchanges that issue one) goes through one transport, which a lock empties. The
	// timeout is oauth's default.
	s.credentials = credentialTransport()
	s.signIns = oauth.New(gate, s.events, oauth.Options{Origins: st.cfg.Origins, Logger: st.log,
		HTTP: &http.Client{Transport: s.credentials, Timeout: 30 * time.Second}})
	configs := &configSync{tools: s.tools, signIns: s.signIns, problems: s.problems, log: st.log}
	if err := configs.apply(ctx, st.cfg, st.fromFile); err != nil {
		return err
	}
	s.mcp = mcp.NewManager(st.cfg.MCPServers, reconciler, mcp.ManagerOptions{
		RefreshInterval: st.cfg.RefreshInterval, Version: version, ApproveStdio: s.commands.Check, OAuth: s.signIns,
		Transport: s.credentials,
	}, st.log)
	s.closers = append(s.closers, func() { s.mcp.Close() })
	s.reload = newReloader(st.flags, st.getenv, st.asRead, st.fromFile, configs, s.mcp, reconciler.Forget)
	return nil
}

// openPending builds the owner's limits, the one run path and the pending calls
// (docs/design.md#rule-30): a call a crash left running is marked interrupted before anything
// can approve, and from then on calls expire and are voided as their rows change, until the
// services close.
func (s *services) openPending(ctx context.Context, st startup, bdb *bun.DB) error {
	// One set of limits, which every front end and the run path check (docs/design.md#rule-33).
	s.limits = limits.NewService(db.NewLimitsStore(bdb), s.tools, time.Now)
	s.runner = runner.New(s.tools, s.mcp, runner.Options{Limits: s.limits})
	var err error
	if s.pending, err = pending.New(pending.Deps{Store: db.NewPendingStore(bdb), Rows: s.tools, Runner: s.runner, Lock: s.daemon,
		Notifier: s.notify, Activity: s.events, Canonical: mcp.Canonicalize}, pending.Options{
		TTL: st.cfg.Agents.ApprovalTTL, Wait: st.cfg.Agents.ApprovalWait, Logger: st.log,
	}); err != nil {
		return err
	}
	if err := s.pending.Recover(ctx); err != nil {
		return err
	}
	// Closed last first: the round stops, then the notices being sent finish.
	s.closers = append(s.closers, s.pending.Close, runUntilStopped(ctx, s.pending.Run))
	return nil
}

// openVoice builds the phrase book and voice, whose turns run enabled rows through the runner
// within the owner's limits (or, for a row confirmed on the phone, become pending calls) and
// are counted by outcome when metrics are on.
func (s *services) openVoice(st startup, bdb *bun.DB) {
	// One phrase book: voice rebuilds its index after the saves the pages make.
	s.book = phrases.NewService(db.NewPhrasesStore(bdb), s.tools, time.Now)
	// The turns' entries are written off their path (activity.Batcher), closed before the
	// database and after voice.
	feed := activity.NewBatcher(s.events, st.log)
	s.closers = append(s.closers, feed.Close)
	s.voice = voice.New(voice.Deps{Rows: s.tools, Binder: s.mcp, Runner: s.runner, Lock: s.daemon,
		Phrases: s.book, Limits: s.limits, Activity: feed, Pending: s.pending}, voice.Options{
		Origins: st.cfg.Origins, WakeWords: st.cfg.Voice.WakeWords,
		TurnsPerSecond: st.cfg.Voice.TurnsPerSecond, Burst: st.cfg.Voice.Burst, Logger: st.log,
		OnTurn: func(o voice.Outcome) {
			if s.registry != nil {
				s.registry.Inc("maven_voice_turns_total", "Voice turns by outcome.", metrics.Label{Name: "outcome", Value: string(o)})
			}
		},
	})
	// The calls waiting for the owner's answer stop as the daemon does.
	s.closers = append(s.closers, s.voice.CancelPending)
}

// close ends what openServices opened, the last opened first.
func (s *services) close() {
	for i := len(s.closers) - 1; i >= 0; i-- {
		s.closers[i]()
	}
}
