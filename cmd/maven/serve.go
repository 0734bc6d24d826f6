package main

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"path/filepath"
	"runtime/debug"
	"strings"
	"syscall"
	"time"

	"github.com/alexedwards/scs/sqlite3store"

	"maven/app/activity"
	"maven/app/allowlist"
	"maven/app/approval"
	"maven/app/auth"
	"maven/app/bearer"
	"maven/app/config"
	"maven/app/ipc"
	"maven/app/mcp"
	"maven/app/metrics"
	"maven/app/oauth"
	"maven/app/phrases"
	"maven/app/runner"
	"maven/app/vault"
	"maven/app/voice"
	"maven/db"
	"maven/handlers"
	"maven/static"
	"maven/views"
)

// loadConfig reads the config file, and reports whether there was one. A missing default
// maven.json means the embedded defaults; a missing file the owner named is an error.
func loadConfig(f serveFlags, getenv func(string) string) (cfg config.Config, fromFile bool, err error) {
	cfg, err = config.Load(f.configPath, getenv)
	fromFile = err == nil
	if errors.Is(err, fs.ErrNotExist) && !f.configExplicit {
		cfg, err = config.Default(), nil
	}
	if err != nil {
		return config.Config{}, false, err
	}
	if f.listen != "" {
		if err := cfg.SetListen(f.listen); err != nil {
			return config.Config{}, false, err
		}
	}
	return cfg, fromFile, nil
}

// serve runs the daemon until ctx is cancelled (SIGINT or SIGTERM), then shuts down in order:
// stop accepting, let in-flight requests finish, close the IPC socket, close the database. It is
// long on purpose (docs/style.md#sizes): every service is wired here, in the order each needs
// the others, so the whole daemon reads top to bottom in one place.
func serve(ctx context.Context, in *invocation, args []string) error {
	// Before any secret can reach memory.
	if err := forbidMemoryReads(); err != nil {
		return err
	}
	// SIGHUP reloads the config; caught from the start, since by default it ends the process.
	hup := make(chan os.Signal, 1)
	signal.Notify(hup, syscall.SIGHUP)
	defer signal.Stop(hup)
	getenv := in.getenv
	flags, err := in.parseServeFlags(args)
	if err != nil {
		return err
	}
	logger := newLogger(in.stderr, flags.logFormat, flags.logLevel)
	cfg, fromFile, err := loadConfig(flags, getenv)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(flags.dataDir, 0o700); err != nil {
		return fmt.Errorf("create data directory: %w", err)
	}

	// The database's upkeep (checkpoints, merging the search index) runs off the writers'
	// path, and stops before the database closes.
	upkeep := db.NewUpkeep(logger)
	bdb, err := db.Open(ctx, filepath.Join(flags.dataDir, "maven.db"), db.OnCommit(upkeep.Committed))
	if err != nil {
		return err
	}
	defer bdb.Close()
	defer runUntilStopped(ctx, func(ctx context.Context) { upkeep.Run(ctx, bdb) })()

	tools := allowlist.NewService(db.NewToolStore(bdb), time.Now)
	problems := &config.Problems{}
	// MCP: one supervisor per configured server, started below under ctx; discovery only
	// proposes rows. Nothing is dialled here.
	reconciler := mcp.NewToolReconciler(tools, time.Now, logger)
	var registry *metrics.Registry
	if cfg.Metrics {
		registry = metrics.New()
		reconciler.OnReconcile(func(server string, took time.Duration) {
			registry.Observe("maven_mcp_reconcile_duration_seconds", "Time to reconcile one complete tool list.", took,
				metrics.Label{Name: "server", Value: server})
		})
	}
	// A stdio server's command line starts only once the owner approved it on /tools, behind a
	// step-up (docs/design.md#rule-21 and docs/design.md#rule-25); its supervisor asks before every
	// start.
	commands := approval.NewService(db.NewApprovalStore(bdb), time.Now)
	// Listen before building what depends on the address (the OAuth callback, the origins):
	// with port 0 the browser origin is only known now. Reloads compare with the config as read.
	asRead := cfg
	ln, err := net.Listen("tcp", cfg.Listen)
	if err != nil {
		return fmt.Errorf("listen on %s: %w", cfg.Listen, err)
	}
	defer ln.Close()
	if err := cfg.SetListen(ln.Addr().String()); err != nil {
		return err
	}
	gate, err := vault.NewGate(ctx, vault.New(db.NewVaultStore(bdb), cfg.RPID, time.Now), logger)
	if err != nil {
		return err
	}
	// OAuth: a remote server that refuses Maven waits for the owner to sign in from its card;
	// tokens are sealed in the vault, and sign-ins recorded in the activity feed.
	feed := activity.New(db.NewActivityStore(bdb), time.Now)
	// Every request that carries a credential (a server's configured headers, its OAuth token,
	// the exchanges that issue one) goes through one transport, which a lock empties. The
	// timeout is oauth's default.
	credentials := credentialTransport()
	signIns := oauth.New(gate, feed, oauth.Options{Origins: cfg.Origins, Logger: logger,
		HTTP: &http.Client{Transport: credentials, Timeout: 30 * time.Second}})
	// The rows and sign-ins of servers the config no longer names go before any server is
	// dialled.
	configs := &configSync{tools: tools, signIns: signIns, problems: problems, log: logger}
	if err := configs.apply(ctx, cfg, fromFile); err != nil {
		return err
	}
	manager := mcp.NewManager(cfg.MCPServers, reconciler, mcp.ManagerOptions{
		RefreshInterval: cfg.RefreshInterval, Version: version, ApproveStdio: commands.Check, OAuth: signIns,
		Transport: credentials,
	}, logger)
	defer manager.Close()
	executor := runner.New(tools, manager, runner.Options{})
	reload := newReloader(flags, getenv, asRead, fromFile, configs, manager, reconciler.Forget)

	// The vault (the gate, above): a daemon that has one starts locked, and nothing that needs a
	// secret runs until the owner unlocks from /unlock. The gate is the one place that knows;
	// unlocking only hands the manager a lookup (SetSecrets never blocks), so no dial happens on
	// the unlock's path.
	gate.OnUnlock(manager.SetSecrets)
	gate.OnLock(func() { manager.SetSecrets(nil) })
	gate.OnLock(signIns.EndSignIns)

	tokens, err := bearer.New(ctx, db.NewSettingsStore(bdb), "voice")
	if err != nil {
		return err
	}
	metricsTokens, err := bearer.New(ctx, db.NewSettingsStore(bdb), "metrics")
	if err != nil {
		return err
	}

	// The owner's passkeys, setup links and step-ups; their changes go to the activity feed.
	owner, err := auth.New(db.NewAuthStore(bdb), auth.Config{
		RPID: cfg.RPID, Origins: cfg.Origins, StepUpWindow: cfg.StepUpWindow, Logger: logger, Activity: feed,
	})
	if err != nil {
		return err
	}

	d := &daemon{started: time.Now(), tools: tools, cfg: cfg, auth: owner, mcp: manager, vault: gate,
		tokens: tokens, metricsTokens: metricsTokens, listen: ln.Addr().String(), problems: problems,
		commands: commands, reload: reload,
		dataDir: flags.dataDir, log: logger, events: startActivity(ctx, feed, gate, manager, logger),
		backup: func(ctx context.Context, path string) (int64, error) { return db.Backup(ctx, bdb, path) }}
	// One phrase book: voice rebuilds its index after the saves the pages make.
	book := phrases.NewService(db.NewPhrasesStore(bdb), tools, time.Now)
	voiceTurns := voice.New(voice.Deps{Rows: tools, Binder: manager, Runner: executor, Lock: d,
		Phrases: book, Activity: d.events}, voice.Options{
		Origins: cfg.Origins, WakeWords: cfg.Voice.WakeWords,
		TurnsPerSecond: cfg.Voice.TurnsPerSecond, Burst: cfg.Voice.Burst, Logger: logger,
		OnTurn: func(o voice.Outcome) {
			if registry != nil {
				registry.Inc("maven_voice_turns_total", "Voice turns by outcome.", metrics.Label{Name: "outcome", Value: string(o)})
			}
		},
	})
	// Written last: the turns' queued audit events reach the database before it closes.
	defer voiceTurns.Close()
	// Locking also drops pending voice confirms and every step-up grant.
	gate.OnLock(voiceTurns.CancelPending)
	gate.OnLock(owner.ForgetStepUps)
	ipcServer := ipc.NewServer(logger, d.ipcMethods())
	if err := ipcServer.Listen(filepath.Join(flags.dataDir, "maven.sock")); err != nil {
		return err
	}
	defer ipcServer.Close()
	go func() {
		if err := ipcServer.Serve(ctx); err != nil && !errors.Is(err, ipc.ErrServerClosed) {
			logger.Error("ipc server stopped", "err", err)
		}
	}()

	// The web app: browser sessions in the same database, templates and static files parsed
	// and hashed once, here.
	tlsOn := cfg.TLSCert != ""
	sessionStore := sqlite3store.NewWithConfig(bdb.DB, sqlite3store.Config{CleanUpInterval: 5 * time.Minute})
	defer sessionStore.StopCleanup()
	assets, err := handlers.NewAssets(static.FS())
	if err != nil {
		return err
	}
	pages, err := views.Parse(assets.URL)
	if err != nil {
		return err
	}
	routes, err := handlers.New(handlers.Deps{
		Logger:         logger,
		Vault:          gate,
		Sessions:       handlers.NewSessionManager(sessionStore, secureCookies(cfg)),
		Auth:           owner,
		Tools:          tools,
		Servers:        manager,
		Commands:       commands,
		Wake:           manager,
		SignIn:         manager,
		OAuth:          signIns,
		Voice:          voiceTurns,
		VoiceTokens:    tokens,
		Guides:         voiceTurns,
		Phrases:        book,
		Activity:       d.events,
		Metrics:        registry,
		MetricsTokens:  metricsTokens,
		MetricsGauges:  d.gauges,
		Views:          pages,
		Assets:         assets,
		Origins:        cfg.Origins,
		TLS:            tlsOn,
		TrustedProxies: cfg.TrustedProxies,
		ConfigSource:   reload.source,
		SecretUsers:    reload.secretUsers,
		ConfigProblems: problems,
	})
	if err != nil {
		return err
	}
	srv := &http.Server{
		Handler:           routes,
		ReadHeaderTimeout: 10 * time.Second,
		ReadTimeout:       30 * time.Second,
		WriteTimeout:      60 * time.Second,
		IdleTimeout:       2 * time.Minute,
		ErrorLog:          slog.NewLogLogger(logger.Handler(), slog.LevelWarn),
	}
	gate.OnLock(func() { releaseAfterLock(credentials) })
	serveErr := make(chan error, 1)
	go func() {
		if tlsOn {
			serveErr <- srv.ServeTLS(ln, cfg.TLSCert, cfg.TLSKey)
			return
		}
		serveErr <- srv.Serve(ln)
	}()
	manager.Run(ctx)
	go reload.onHangup(ctx, hup)
	logger.Info("listening", "addr", d.listen, "data", flags.dataDir, "version", readBuildInfo().String())
	logStart(logger, flags, fromFile, cfg, d.listen)
	if err := printFirstSetupLink(ctx, owner, logger); err != nil {
		logger.Error("could not issue a setup link; run 'maven setup-link'", "err", err)
	}

	select {
	case err := <-serveErr:
		return fmt.Errorf("http server: %w", err)
	case <-ctx.Done():
	}
	logger.Info("shutting down")
	shutdownCtx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := srv.Shutdown(shutdownCtx); err != nil {
		logger.Warn("http shutdown", "err", err)
	}
	logger.Info("stopped")
	return nil
}

// printFirstSetupLink logs a one-time setup link while no passkey is registered, so the first
// start tells the owner where to begin.
func printFirstSetupLink(ctx context.Context, owner *auth.Service, logger *slog.Logger) error {
	has, err := owner.HasPasskeys(ctx)
	if err != nil || has {
		return err
	}
	link, err := owner.NewSetupLink(ctx, "system")
	if err != nil {
		return err
	}
	logger.Info("no passkey is registered yet: open this one-time setup link to register one (valid 15 minutes, works once; 'maven setup-link' prints a new one)",
		"url", owner.SetupURL(link), "expires", link.ExpiresAt.UTC().Format(time.RFC3339))
	return nil
}

// secureCookies reports whether the browser reaches Maven over HTTPS: served with tls_cert, or
// behind a TLS-terminating proxy (every configured origin is https). The session cookie is then
// Secure and named __Host-maven.
func secureCookies(cfg config.Config) bool {
	if cfg.TLSCert != "" {
		return true
	}
	for _, o := range cfg.Origins {
		if !strings.HasPrefix(o, "https://") {
			return false
		}
	}
	return len(cfg.Origins) > 0
}

// syncConfigTools proposes the config's local commands and puts what the config holds that the
// daemon starts despite (its warnings, a tool that could not be proposed) in problems, logging
// each: one bad entry never stops the daemon.
func syncConfigTools(ctx context.Context, tools *allowlist.Service, cfg config.Config, problems *config.Problems, logger *slog.Logger) error {
	list := cfg.WarningProblems()
	refused, err := tools.SyncConfigTools(ctx, localTools(cfg))
	if err != nil {
		return fmt.Errorf("propose the config's tools: %w", err)
	}
	for _, r := range refused {
		list = append(list, config.Problem{
			Key: fmt.Sprintf("tools[%d].name", r.Index), Level: config.LevelError,
			Msg: fmt.Sprintf("%q was not proposed: %s. Give the config tool another name: a row keeps its name for its audit trail, withdrawn or not",
				r.Name, strings.TrimPrefix(r.Err.Error(), allowlist.ErrInvalid.Error()+": ")),
		})
	}
	for _, p := range list {
		level := slog.LevelWarn
		if p.Level == config.LevelError {
			level = slog.LevelError
		}
		logger.Log(ctx, level, "config: "+p.Msg, "key", p.Key)
	}
	problems.Set(list)
	return nil
}

func localTools(cfg config.Config) []allowlist.LocalTool {
	out := make([]allowlist.LocalTool, len(cfg.Tools))
	for i, t := range cfg.Tools {
		out[i] = allowlist.LocalTool{Name: t.Name, Argv: t.Argv}
	}
	return out
}

// credentialTransport is http.DefaultTransport without its idle timeout, for the requests that
// carry credentials. net/http arms a timer on every connection that goes idle, and closing the
// connection only stops it; a stopped timer stays in the runtime's timer heap until its time
// would have come (90s) or the heap is tidied, and it holds the connection, whose write buffer
// keeps the last request, Authorization header and all. So after a lock a token could outlive
// every collection. Without the timer, a closed connection is garbage once its read loop ends
// (docs/design.md#rule-22). An idle connection is then closed by the server or by a lock; there
// are at most two per server (MaxIdleConnsPerHost).
func credentialTransport() *http.Transport {
	t := http.DefaultTransport.(*http.Transport).Clone()
	t.IdleConnTimeout = 0
	return t
}

// releaseAfterLock collects what a lock freed, over the seconds the sessions that used secrets
// take to close (on their own goroutines; a graceful close waits a few seconds at most). The
// idle connections of credentials (credentialTransport) keep their last request and response,
// Authorization header and tokens, in their buffers, so they are closed. Each pass first
// collects what the ones before closed, so that clobberfree (see clobberFreed) overwrites it
// and whole pages go back to the kernel. It never blocks the lock.
func releaseAfterLock(credentials *http.Transport) {
	for _, after := range []time.Duration{time.Second, 3 * time.Second, 6 * time.Second, 10 * time.Second, 15 * time.Second, 25 * time.Second} {
		time.AfterFunc(after, func() {
			debug.FreeOSMemory()
			credentials.CloseIdleConnections()
		})
	}
}

// runUntilStopped runs fn on a goroutine of its own, and returns what stops it: that cancels
// fn's context and waits for fn to return.
func runUntilStopped(ctx context.Context, fn func(context.Context)) (stop func()) {
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() { defer close(done); fn(ctx) }()
	return func() { cancel(); <-done }
}
