package main

import (
	"flag"
	"io"
	"log/slog"
	"path/filepath"
	"strings"
)

// serveFlags are the daemon's settings from flags and environment; flags win.
type serveFlags struct {
	configPath     string
	configExplicit bool
	dataDir        string // absolute
	listen         string
	logFormat      string // "text" or "json"
	logLevel       slog.Level
}

func (in *invocation) parseServeFlags(args []string) (serveFlags, error) {
	getenv := in.getenv
	fs := flag.NewFlagSet("serve", flag.ContinueOnError)
	var f serveFlags
	level := envOr(getenv, "MAVEN_LOG_LEVEL", "info")
	fs.StringVar(&f.configPath, "config", getenv("MAVEN_CONFIG"), "config file (default maven.json in $CONFIGURATION_DIRECTORY under systemd, else in the working directory, if it exists; env MAVEN_CONFIG)")
	fs.StringVar(&f.dataDir, "data", defaultDataDir(getenv), "data directory (env MAVEN_DATA; STATE_DIRECTORY under systemd)")
	fs.StringVar(&f.listen, "listen", getenv("MAVEN_LISTEN"), "listen address, default from the config or 127.0.0.1:8080 (env MAVEN_LISTEN)")
	fs.StringVar(&f.logFormat, "log-format", envOr(getenv, "MAVEN_LOG_FORMAT", "text"), "log as text (key=value) or json, one object a line (env MAVEN_LOG_FORMAT)")
	fs.StringVar(&level, "log-level", level, "debug, info, warn or error (env MAVEN_LOG_LEVEL)")
	rest, _, err := in.parseFlags(fs, args)
	if err != nil {
		return f, err
	}
	if len(rest) > 0 {
		return f, usagef("serve", "serve takes no arguments, got %q", rest[0])
	}
	if f.logFormat != "text" && f.logFormat != "json" {
		return f, usagef("serve", "--log-format is text or json, not %q", f.logFormat)
	}
	if err := f.logLevel.UnmarshalText([]byte(level)); err != nil || strings.ContainsAny(level, "+-") {
		return f, usagef("serve", "--log-level is debug, info, warn or error, not %q", level)
	}
	if f.dataDir, err = absDataDir(f.dataDir); err != nil {
		return f, err
	}
	f.configExplicit = f.configPath != ""
	if !f.configExplicit {
		f.configPath = defaultConfigPath(getenv)
	}
	return f, nil
}

// defaultConfigPath is the config file read when neither --config nor MAVEN_CONFIG names one,
// and only if it exists: maven.json in the configuration directory systemd made for the
// service (ConfigurationDirectory=), else in the working directory. A file named explicitly
// must exist; this one need not, so the unit starts on the defaults until the owner writes it.
func defaultConfigPath(getenv func(string) string) string {
	if dirs := getenv("CONFIGURATION_DIRECTORY"); dirs != "" {
		// One path per ConfigurationDirectory=, separated by colons; Maven's is the first.
		dir, _, _ := strings.Cut(dirs, ":")
		return filepath.Join(dir, "maven.json")
	}
	return "maven.json"
}

// newLogger logs to w in format ("text" or "json") from level up.
func newLogger(w io.Writer, format string, level slog.Level) *slog.Logger {
	opts := &slog.HandlerOptions{Level: level}
	if format == "json" {
		return slog.New(slog.NewJSONHandler(w, opts))
	}
	return slog.New(slog.NewTextHandler(w, opts))
}
