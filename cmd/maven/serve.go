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
	"strings"
	"syscall"
	"time"

	"github.com/alexedwards/scs/sqlite3store"
	"github.com/uptrace/bun"

	"maven/app/allowlist"
	"maven/app/auth"
	"maven/app/config"
	"maven/app/ipc"
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

// serve runs the daemon until ctx is cancelled (SIGINT or SIGTERM). It starts in order: the
// config, the database, the listener, the services (openServices), the IPC socket, the web app
// (newWebServer), then the MCP servers' supervisors. It shuts down in the reverse order: stop
// accepting, let in-flight requests finish, close the IPC socket, the services, the database.
func serve(ctx context.Context, in *invocation, args []string) error {
	// Before any secret can reach memory.
	if err := forbidMemoryReads(); err != nil {
		return err
	}
	// SIGHUP reloads the config; caught from the start, since by default it ends the process.
	hup := make(chan os.Signal, 1)
	signal.Notify(hup, syscall.SIGHUP)
	defer signal.Stop(hup)
	flags, err := in.parseServeFlags(args)
	if err != nil {
		return err
	}
	logger := newLogger(in.stderr, flags.logFormat, flags.logLevel)
	cfg, fromFile, err := loadConfig(flags, in.getenv)
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
	// Listen before building what depends on the address (the OAuth callback, the origins):
	// with port 0 the browser origin is only known now. Reloads compare with the config as read.
	st := startup{flags: flags, getenv: in.getenv, asRead: cfg, fromFile: fromFile, log: logger}
	ln, err := net.Listen("tcp", cfg.Listen)
	if err != nil {
		return fmt.Errorf("listen on %s: %w", cfg.Listen, err)
	}
	defer ln.Close()
	if err := cfg.SetListen(ln.Addr().String()); err != nil {
		return err
	}
	st.cfg, st.listen = cfg, ln.Addr().String()
	svc, err := openServices(ctx, st, bdb)
	if err != nil {
		return err
	}
	defer svc.close()
	// The first setup link is made before the IPC socket answers, so that a `maven setup-link`
	// run as soon as the daemon starts makes the newer link, not one this voids (a new link
	// voids the last: docs/design.md#rule-20).
	firstLink := firstSetupLink(ctx, svc.auth, logger)
	ipcServer, err := startIPC(ctx, svc.daemon)
	if err != nil {
		return err
	}
	defer ipcServer.Close()
	srv, stopSessions, err := newWebServer(svc, bdb)
	if err != nil {
		return err
	}
	defer stopSessions()

	serveErr := serveHTTP(srv, ln, cfg)
	defer runUntilStopped(ctx, func(ctx context.Context) { releaseAfterBursts(ctx, svc.tools.Changed, releaseQuiet, freeOSMemory) })()
	defer runUntilStopped(ctx, func(ctx context.Context) { releaseAfterBursts(ctx, svc.agents.Listed, releaseQuiet, freeOSMemory) })()
	svc.mcp.Run(ctx)
	go svc.reload.onHangup(ctx, hup)
	logger.Info("listening", "addr", svc.listen, "data", flags.dataDir, "version", readBuildInfo().String())
	logStart(logger, flags, fromFile, cfg, svc.listen)
	announceSetupLink(logger, svc.auth, firstLink)
	select {
	case err := <-serveErr:
		return fmt.Errorf("http server: %w", err)
	case <-ctx.Done():
	}
	stopHTTP(srv, logger)
	return nil
}

// startIPC serves the IPC methods on the socket in the data directory until ctx is done or the
// server is closed.
func startIPC(ctx context.Context, d *daemon) (*ipc.Server, error) {
	s := ipc.NewServer(d.log, d.ipcMethods())
	if err := s.Listen(filepath.Join(d.dataDir, "maven.sock")); err != nil {
		return nil, err
	}
	go func() {
		if err := s.Serve(ctx); err != nil && !errors.Is(err, ipc.ErrServerClosed) {
			d.log.Error("ipc server stopped", "err", err)
		}
	}()
	return s, nil
}

// newWebServer builds the web app over svc: templates and static files parsed and hashed once,
// here, browser sessions kept in the same database, the handlers, and an http.Server with
// timeouts. stop ends the sessions' cleanup.
func newWebServer(svc *services, bdb *bun.DB) (srv *http.Server, stop func(), err error) {
	assets, err := handlers.NewAssets(static.FS())
	if err != nil {
		return nil, nil, err
	}
	pages, err := views.Parse(assets.URL)
	if err != nil {
		return nil, nil, err
	}
	sessionStore := sqlite3store.NewWithConfig(bdb.DB, sqlite3store.Config{CleanUpInterval: 5 * time.Minute})
	web, err := handlers.New(handlers.Deps{
		Logger:         svc.log,
		Vault:          svc.vault,
		Sessions:       handlers.NewSessionManager(sessionStore, secureCookies(svc.cfg)),
		Auth:           svc.auth,
		Tools:          svc.tools,
		Servers:        svc.mcp,
		Commands:       svc.commands,
		Wake:           svc.mcp,
		SignIn:         svc.mcp,
		OAuth:          svc.signIns,
		Voice:          svc.voice,
		VoiceTokens:    svc.tokens,
		Guides:         svc.voice,
		Phrases:        svc.book,
		Limits:         svc.limits,
		Activity:       svc.events,
		Notifications:  svc.notify,
		Approvals:      svc.pending,
		Metrics:        svc.registry,
		MetricsTokens:  svc.metricsTokens,
		MetricsGauges:  svc.gauges,
		Views:          pages,
		Assets:         assets,
		Origins:        svc.cfg.Origins,
		TLS:            svc.cfg.TLSCert != "",
		TrustedProxies: svc.cfg.TrustedProxies,
		ConfigSource:   svc.reload.source,
		SecretUsers:    svc.reload.secretUsers,
		ConfigProblems: svc.problems,
		Clients:        svc.clients,
		Agents:         handlers.AgentDeps{Servers: svc.agents, Tokens: agentTokens{svc.clients}},
	})
	if err != nil {
		sessionStore.StopCleanup()
		return nil, nil, err
	}
	return &http.Server{
		Handler:           web,
		ReadHeaderTimeout: 10 * time.Second,
		ReadTimeout:       30 * time.Second,
		WriteTimeout:      60 * time.Second,
		IdleTimeout:       2 * time.Minute,
		ErrorLog:          slog.NewLogLogger(svc.log.Handler(), slog.LevelWarn),
	}, sessionStore.StopCleanup, nil
}

// serveHTTP serves srv on ln, over TLS when the config names a certificate, and returns the
// channel that reports why it stopped.
func serveHTTP(srv *http.Server, ln net.Listener, cfg config.Config) <-chan error {
	serveErr := make(chan error, 1)
	go func() {
		if cfg.TLSCert != "" {
			serveErr <- srv.ServeTLS(ln, cfg.TLSCert, cfg.TLSKey)
			return
		}
		serveErr <- srv.Serve(ln)
	}()
	return serveErr
}

// stopHTTP stops accepting and lets the in-flight requests finish, for 10 s at most.
func stopHTTP(srv *http.Server, logger *slog.Logger) {
	logger.Info("shutting down")
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := srv.Shutdown(ctx); err != nil {
		logger.Warn("http shutdown", "err", err)
	}
	logger.Info("stopped")
}

// firstSetupLink is a one-time setup link while no passkey is registered (else nil), so that the
// first start tells the owner where to begin.
func firstSetupLink(ctx context.Context, owner *auth.Service, logger *slog.Logger) *auth.SetupLink {
	has, err := owner.HasPasskeys(ctx)
	if err == nil && has {
		return nil
	}
	var link auth.SetupLink
	if err == nil {
		link, err = owner.NewSetupLink(ctx, "system")
	}
	if err != nil {
		logger.Error("could not issue a setup link; run 'maven setup-link'", "err", err)
		return nil
	}
	return &link
}

// announceSetupLink logs the first setup link, if there is one.
func announceSetupLink(logger *slog.Logger, owner *auth.Service, link *auth.SetupLink) {
	if link != nil {
		logger.Info("no passkey is registered yet: open this one-time setup link to register one (valid 15 minutes, works once; 'maven setup-link' prints a new one)",
			"url", owner.SetupURL(*link), "expires", link.ExpiresAt.UTC().Format(time.RFC3339))
	}
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

// runUntilStopped runs fn on a goroutine of its own, and returns what stops it: that cancels
// fn's context and waits for fn to return.
func runUntilStopped(ctx context.Context, fn func(context.Context)) (stop func()) {
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() { defer close(done); fn(ctx) }()
	return func() { cancel(); <-done }
}
