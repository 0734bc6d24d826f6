package e2e

import (
	"net/http"
	"testing"
	"time"

	"maven/internal/daemontest"
)

// TestSetupLinkInLog checks that the harness finds the setup link however the daemon prints it.
func TestSetupLinkInLog(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, line, want string
	}{
		{"slog quoted", `time=X level=INFO msg="setup link" url="http://localhost:8080/setup?token=abc"`, "http://localhost:8080/setup?token=abc"},
		{"slog bare", `time=X level=INFO msg=setup url=http://localhost:8080/setup/abc`, "http://localhost:8080/setup/abc"},
		{"plain text", `Open http://localhost:41000/setup#t=abc within 15 minutes to register your passkey.`, "http://localhost:41000/setup#t=abc"},
		{"not a link", `time=X level=INFO msg=listening addr=127.0.0.1:4000`, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			l := &daemontest.Log{}
			l.Write([]byte(tt.line + "\n"))
			got, _ := l.Wait(setupLinkRE, 0)
			if got != tt.want {
				t.Errorf("link = %q, want %q", got, tt.want)
			}
		})
	}

	t.Run("waits for a later line", func(t *testing.T) {
		l := &daemontest.Log{}
		go l.Write([]byte(`msg="setup link" url="http://localhost:1/setup?token=x"` + "\n"))
		if got, ok := l.Wait(setupLinkRE, 5*time.Second); !ok || got != "http://localhost:1/setup?token=x" {
			t.Errorf("Wait = %q, %v", got, ok)
		}
	})
}

// TestRebase checks that a printed link moves onto the daemon's localhost origin.
func TestRebase(t *testing.T) {
	t.Parallel()
	m := &mavenProc{t: t, BaseURL: "http://localhost:4242"}
	for in, want := range map[string]string{
		"http://127.0.0.1:8080/setup?token=abc": "http://localhost:4242/setup?token=abc",
		"https://maven.example/setup#frag":      "http://localhost:4242/setup#frag",
		"http://localhost:8080":                 "http://localhost:4242",
	} {
		if got := m.Rebase(in); got != want {
			t.Errorf("Rebase(%q) = %q, want %q", in, got, want)
		}
	}
}

// TestRestart checks that a restarted daemon keeps its port, so the browser's origin survives.
func TestRestart(t *testing.T) {
	t.Parallel()
	m := startMaven(t, mavenOptions{})
	base, data := m.BaseURL, m.Data
	m.Restart()
	if m.BaseURL != base || m.Data != data {
		t.Errorf("after restart %s with data %s, want %s with %s", m.BaseURL, m.Data, base, data)
	}
	resp, err := http.Get("http://" + m.Addr + "/healthz")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Errorf("healthz after restart: %s", resp.Status)
	}
}

// TestAxeFindsAViolation: the accessibility check can fail: a button without a name, put into
// a real page, is found.
func TestAxeFindsAViolation(t *testing.T) {
	t.Parallel()
	m := startMaven(t, mavenOptions{})
	tb := newBrowser(t)
	tb.Goto(m.URL("/login"))
	if _, err := tb.Page.Evaluate(`() => {
		const b = document.createElement("button");
		document.querySelector("main").appendChild(b);
	}`); err != nil {
		t.Fatal(err)
	}
	found := runAxe(t, tb)
	for _, v := range found {
		if v.ID == "button-name" {
			return
		}
	}
	t.Fatalf("axe did not find the button without a name: %+v", found)
}
