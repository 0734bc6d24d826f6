package main

import (
	"log/slog"
	"net"
	"net/netip"
	"net/url"
	"path/filepath"
	"strings"

	"maven/app/config"
)

// configFile is the config file the daemon reads, or would read (it does not exist and the
// embedded defaults run), as an absolute path for the log and an empty /tools.
func configFile(f serveFlags) string {
	if abs, err := filepath.Abs(f.configPath); err == nil {
		return abs
	}
	return f.configPath
}

// logStart says at start where the config came from (fromFile: it was read from the file,
// else the defaults run) and what it holds, where a browser opens Maven, and, when Maven
// listens beyond this machine but every origin is on localhost, why a browser elsewhere cannot
// use passkeys and what to do about it.
func logStart(logger *slog.Logger, f serveFlags, fromFile bool, cfg config.Config, listen string) {
	path := configFile(f)
	if fromFile {
		logger.Info("config read", "file", path, "mcp_servers", len(cfg.MCPServers), "tools", len(cfg.Tools))
	} else {
		logger.Info("no config file: running on the defaults", "file", path)
	}
	for _, o := range cfg.Origins {
		logger.Info("open Maven in a browser", "url", o+"/")
	}
	if beyondLoopback(listen) && localOrigins(cfg.Origins) {
		_, port, _ := net.SplitHostPort(listen)
		logger.Warn("Maven listens beyond this machine, but its only origins are on localhost: a browser on another computer cannot use passkeys here. "+
			"Reach it through an SSH tunnel, or give it a name and HTTPS (rp_id, origins, tls_cert; README: \"A headless home server\")",
			"listen", listen, "tunnel", "ssh -L "+port+":localhost:"+port+" you@THIS-MACHINE")
	}
}

// beyondLoopback reports whether addr listens on more than the loopback interface.
func beyondLoopback(addr string) bool {
	host, _, err := net.SplitHostPort(addr)
	if err != nil || strings.EqualFold(host, "localhost") {
		return false
	}
	ip, err := netip.ParseAddr(host)
	return err != nil || !ip.IsLoopback()
}

// localOrigins reports whether every origin is on localhost, which only this machine's browser
// reaches.
func localOrigins(origins []string) bool {
	for _, o := range origins {
		u, err := url.Parse(o)
		if err != nil {
			return false
		}
		h := strings.ToLower(u.Hostname())
		if h != "localhost" && !strings.HasSuffix(h, ".localhost") {
			return false
		}
	}
	return len(origins) > 0
}
