package main

import (
	"log/slog"
	"net"
	"net/netip"
	"net/url"
	"path/filepath"
	"slices"
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
// use passkeys and what to do about it; and where a voice front end posts (logVoice).
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
	logVoice(logger, listen, cfg, interfaceAddrs())
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

// logVoice says where POST /voice is reachable, so that a Home Assistant on another machine is
// given an address that works; on loopback alone, that no other machine can reach it and what
// to set. ifaces are this machine's addresses, for a listen on every interface.
func logVoice(logger *slog.Logger, listen string, cfg config.Config, ifaces []netip.Addr) {
	urls := voiceURLs(listen, cfg.TLSCert != "", cfg.Origins, ifaces)
	if !beyondLoopback(listen) && localOrigins(cfg.Origins) {
		_, port, _ := net.SplitHostPort(listen)
		logger.Info("voice webhook: POST /voice answers on this machine only; for Home Assistant on another machine, "+
			`set "listen" to this machine's LAN address or "0.0.0.0:`+port+`" and restart (README: "Home Assistant")`, "urls", urls)
		return
	}
	logger.Info("voice webhook: POST /voice", "urls", urls)
}

// voiceURLs are the addresses POST /voice answers at: the listen address (this machine's own
// addresses for a listen on every interface), and the origins that are not on localhost (a
// proxy's, or a name with tls_cert), since /voice answers any Host.
func voiceURLs(listen string, tls bool, origins []string, ifaces []netip.Addr) []string {
	scheme := "http://"
	if tls {
		scheme = "https://"
	}
	host, port, err := net.SplitHostPort(listen)
	if err != nil {
		return nil
	}
	var out []string
	add := func(h string) {
		u := scheme + net.JoinHostPort(h, port) + "/voice"
		if !slices.Contains(out, u) {
			out = append(out, u)
		}
	}
	ip, err := netip.ParseAddr(host)
	switch {
	case host == "" || err == nil && ip.IsUnspecified():
		for _, a := range ifaces {
			// 0.0.0.0 is IPv4 alone; [::] and "" take both families.
			if a.IsGlobalUnicast() && (!ip.Is4() || a.Is4()) {
				add(a.String())
			}
		}
		if len(out) == 0 {
			add("THIS-MACHINE")
		}
	default:
		add(host)
	}
	for _, o := range origins {
		if !localOrigins([]string{o}) {
			if u := strings.TrimSuffix(o, "/") + "/voice"; !slices.Contains(out, u) {
				out = append(out, u)
			}
		}
	}
	return out
}

// interfaceAddrs are this machine's unicast addresses, none when they cannot be read.
func interfaceAddrs() []netip.Addr {
	addrs, err := net.InterfaceAddrs()
	if err != nil {
		return nil
	}
	var out []netip.Addr
	for _, a := range addrs {
		if p, err := netip.ParsePrefix(a.String()); err == nil {
			out = append(out, p.Addr().Unmap())
		}
	}
	return out
}
