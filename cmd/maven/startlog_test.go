package main

import (
	"bytes"
	"log/slog"
	"net/netip"
	"path/filepath"
	"strings"
	"testing"

	"maven/app/config"
)

// The start-up log names the config file and what it holds, the origins to open, and warns
// only when Maven listens beyond loopback with nothing but localhost origins.
func TestLogStart(t *testing.T) {
	dir := t.TempDir()
	for _, tt := range []struct {
		name, listen string
		origins      []string
		warn         bool
	}{
		{"loopback", "127.0.0.1:8080", []string{"http://localhost:8080"}, false},
		{"all interfaces, localhost origin", "0.0.0.0:8080", []string{"http://localhost:8080"}, true},
		{"a LAN address, localhost origin", "192.168.1.20:8080", []string{"http://localhost:8080"}, true},
		{"all interfaces, a named origin", "[::]:8443", []string{"https://maven.home.example:8443"}, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var buf bytes.Buffer
			cfg := config.Default()
			cfg.Origins = tt.origins
			logStart(slog.New(slog.NewTextHandler(&buf, nil)), serveFlags{configPath: filepath.Join(dir, "maven.json")}, false, cfg, tt.listen)
			out := buf.String()
			if !strings.Contains(out, "no config file: running on the defaults") || !strings.Contains(out, filepath.Join(dir, "maven.json")) {
				t.Errorf("the config file is not named:\n%s", out)
			}
			if !strings.Contains(out, `url=`+tt.origins[0]+`/`) {
				t.Errorf("the origin is not logged:\n%s", out)
			}
			if got := strings.Contains(out, "level=WARN"); got != tt.warn {
				t.Errorf("warned %v, want %v:\n%s", got, tt.warn, out)
			}
			if tt.warn && !strings.Contains(out, `tunnel="ssh -L 8080:localhost:8080 you@THIS-MACHINE"`) {
				t.Errorf("the warning gives no tunnel command:\n%s", out)
			}
		})
	}
}

// The start-up log says at which addresses POST /voice answers, so Home Assistant on another
// machine is given one that works; listening on loopback alone, it says no other machine can
// reach it and what to set.
func TestLogVoice(t *testing.T) {
	lan := []netip.Addr{netip.MustParseAddr("127.0.0.1"), netip.MustParseAddr("192.168.1.20"),
		netip.MustParseAddr("fe80::1"), netip.MustParseAddr("2001:db8::20")}
	for _, tt := range []struct {
		name, listen string
		tls          bool
		origins      []string
		want         string // the urls, as logged
		onlyHere     bool
	}{
		{"loopback", "127.0.0.1:8080", false, []string{"http://localhost:8080"}, "urls=[http://127.0.0.1:8080/voice]", true},
		{"every IPv4 interface", "0.0.0.0:8080", false, []string{"http://localhost:8080"}, "urls=[http://192.168.1.20:8080/voice]", false},
		{"every interface", "[::]:8080", false, []string{"http://localhost:8080"}, "urls=\"[http://192.168.1.20:8080/voice http://[2001:db8::20]:8080/voice]\"", false},
		{"a LAN address, with TLS", "192.168.1.20:8443", true, []string{"https://maven.home.example:8443"}, "urls=\"[https://192.168.1.20:8443/voice https://maven.home.example:8443/voice]\"", false},
		{"loopback behind a proxy", "127.0.0.1:8080", false, []string{"https://maven.example"}, "urls=\"[http://127.0.0.1:8080/voice https://maven.example/voice]\"", false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var buf bytes.Buffer
			cfg := config.Default()
			cfg.Origins = tt.origins
			if tt.tls {
				cfg.TLSCert = "/etc/maven/cert.pem"
			}
			logVoice(slog.New(slog.NewTextHandler(&buf, nil)), tt.listen, cfg, lan)
			out := buf.String()
			if !strings.Contains(out, tt.want) {
				t.Errorf("want %s in:\n%s", tt.want, out)
			}
			if got := strings.Contains(out, "this machine only"); got != tt.onlyHere {
				t.Errorf("says this machine only: %v, want %v:\n%s", got, tt.onlyHere, out)
			}
			if tt.onlyHere && !strings.Contains(out, "0.0.0.0:8080") {
				t.Errorf("does not say what to set:\n%s", out)
			}
		})
	}
}
