package main

import (
	"encoding/json"
	"net/http"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
)

var setupURLRE = regexp.MustCompile(`url="(http://localhost:\d+/setup\?token=[A-Z0-9]+)"`)

func TestFirstStartPrintsSetupLink(t *testing.T) {
	data := filepath.Join(t.TempDir(), "data")
	d := startDaemon(t, data)

	var printed string
	waitFor(t, 10*time.Second, func() bool {
		m := setupURLRE.FindStringSubmatch(d.stderr.String())
		if m != nil {
			printed = m[1]
		}
		return m != nil
	})
	// The link names the browser origin of the port actually bound, not port 0.
	_, port, _ := strings.Cut(d.addr, ":")
	if !strings.HasPrefix(printed, "http://localhost:"+port+"/setup?token=") {
		t.Fatalf("setup link %q does not use the listening port %s", printed, port)
	}
	// Pages answer at the configured origin's host only (docs/design.md#rule-23).
	req, _ := http.NewRequest(http.MethodGet, "http://"+d.addr+strings.TrimPrefix(printed, "http://localhost:"+port), nil)
	req.Host = "localhost:" + port
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("printed setup link: %d", resp.StatusCode)
	}

	out, err := maven(t, data, "setup-link", "--json")
	if err != nil {
		t.Fatalf("setup-link: %v %s", err, out)
	}
	var link setupLinkResult
	if err := json.Unmarshal([]byte(out), &link); err != nil || !strings.Contains(link.URL, "/setup?token=") || link.URL == printed {
		t.Fatalf("setup-link --json: %v %+v", err, link)
	}
	if until := time.Until(link.ExpiresAt); until < 14*time.Minute || until > 15*time.Minute {
		t.Fatalf("setup link valid for %s", until)
	}
	human, err := maven(t, data, "setup-link")
	if err != nil || !strings.Contains(human, "/setup?token=") {
		t.Fatalf("setup-link: %v %q", err, human)
	}
}

// newSetupLink asks the daemon with data directory data for a setup link, as `maven setup-link
// --json` prints it.
func newSetupLink(t *testing.T, data string) setupLinkResult {
	t.Helper()
	out, err := maven(t, data, "setup-link", "--json")
	var link setupLinkResult
	if err != nil || json.Unmarshal([]byte(out), &link) != nil {
		t.Fatalf("setup-link: %v %s", err, out)
	}
	return link
}
