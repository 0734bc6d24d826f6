package main

import (
	"bytes"
	"log/slog"
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
