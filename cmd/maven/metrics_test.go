package main

import (
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func getMetrics(t *testing.T, addr, token string) (int, string) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodGet, "http://"+addr+"/metrics", nil)
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	// Redirects are answers too: a disabled endpoint must not end in a 200 after one.
	client := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

func TestMetricsEndpoint(t *testing.T) {
	dir := t.TempDir()
	cfg := filepath.Join(dir, "maven.json")
	if err := os.WriteFile(cfg, []byte(`{"metrics": true, "tools": [{"name": "uptime", "argv": ["/usr/bin/uptime"]}]}`), 0o600); err != nil {
		t.Fatal(err)
	}
	data := filepath.Join(dir, "data")
	d := startDaemon(t, data, "--config", cfg)
	if code, _ := getMetrics(t, d.addr, ""); code != http.StatusUnauthorized {
		t.Fatalf("no token: %d", code)
	}
	voiceToken, _ := maven(t, data, "voice-token", "--rotate")
	if code, _ := getMetrics(t, d.addr, strings.TrimSpace(voiceToken)); code != http.StatusUnauthorized {
		t.Fatalf("the voice token opened /metrics: %d", code)
	}
	token, err := maven(t, data, "metrics-token", "--rotate")
	if err != nil {
		t.Fatalf("%v %s", err, token)
	}
	postVoice(t, d.addr, strings.TrimSpace(voiceToken), "c", "nothing by that name")
	code, body := getMetrics(t, d.addr, strings.TrimSpace(token))
	if code != http.StatusOK {
		t.Fatalf("%d %s", code, body)
	}
	for _, want := range []string{
		`maven_tools{state="proposed"} 1`,
		`maven_voice_turns_total{outcome="no_match"} 1`,
		`maven_http_requests_total{route="/voice",code="200"} 1`,
		`maven_http_requests_total{route="/healthz",code="200"}`,
		`maven_locked 0`,
	} {
		if !strings.Contains(body, want) {
			t.Errorf("metrics lack %q:\n%s", want, body)
		}
	}
}

func TestMetricsOffByDefault(t *testing.T) {
	data := filepath.Join(t.TempDir(), "data")
	d := startDaemon(t, data)
	token, _ := maven(t, data, "metrics-token", "--rotate")
	if code, body := getMetrics(t, d.addr, strings.TrimSpace(token)); code == http.StatusOK || strings.Contains(body, "maven_") {
		t.Fatalf("/metrics answered without \"metrics\": true in the config: %d %s", code, body)
	}
}
