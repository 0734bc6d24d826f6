package handlers_test

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"maven/app/auth/authtest"
	"maven/app/mcp"
)

// TestServersCardShowsWhyAServerExited: a stdio server whose process exited shows its exit
// status and its last lines on stderr, each as text (hostile markup escaped, hidden characters
// spelled out).
func TestServersCardShowsWhyAServerExited(t *testing.T) {
	f := newFixture(t)
	b := f.signUp(authtest.New(testOrigin))
	f.servers.set(mcp.ServerStatus{Name: "brave", Transport: "stdio", Target: "npx -y brave-search", State: mcp.StateBackoff,
		Trust: mcp.TrustLocalProcess, LastError: "exited with status 1: BRAVE_API_KEY is required",
		LastStderr: "starting <b>up</b>\nkey \u202e***\nBRAVE_API_KEY is required", Since: time.Now()})
	body := b.htmx(http.MethodGet, "/tools/servers", nil).Body.String()
	for _, want := range []string{
		"exited with status 1: BRAVE_API_KEY is required", "Its last lines on stderr",
		"<pre class=\"stderr-lines\">starting &lt;b&gt;up&lt;/b&gt;\nkey ", mark("U+202E") + "</mark>***\nBRAVE_API_KEY is required\n</pre>",
	} {
		if !strings.Contains(body, want) {
			t.Errorf("the card lacks %q:\n%s", want, body)
		}
	}
}
