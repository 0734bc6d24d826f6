package handlers_test

import (
	"net/http"
	"net/url"
	"strings"
	"testing"

	"maven/app/auth"
	"maven/app/auth/authtest"
)

// /secrets lists the secrets the config refers to, which servers use each and which are
// missing, even before any is set; deleting one asks first, naming the servers that stop, and
// the passkey prompt names them too.
func TestSecretsPageListsWhatTheConfigNeeds(t *testing.T) {
	vf := newVaultFixture(t, `{
		"vikunja": {"type": "http", "url": "http://127.0.0.1:1/mcp", "headers": {"Authorization": "Bearer ${secret:vikunja_token}"}},
		"lights":  {"type": "http", "url": "http://127.0.0.1:1/mcp", "headers": {"Authorization": "Bearer ${secret:ha_token}"}},
		"climate": {"type": "http", "url": "http://127.0.0.1:1/mcp", "headers": {"Authorization": "Bearer ${secret:ha_token}"}}
	}`)
	a := authtest.New(testOrigin)
	b, _ := vf.setUp(a)
	page := b.get("/secrets").Body.String()
	for _, want := range []string{
		"2 secrets the config refers to are", `<li data-secret="ha_token" data-missing>`, `<li data-secret="vikunja_token" data-missing>`,
		"used by <strong>climate</strong>, <strong>lights</strong>", `<span class="badge missing">missing</span>`,
		`<label for="secret-value-0">Value of <code>ha_token</code></label>`,
	} {
		if !strings.Contains(page, want) {
			t.Errorf("/secrets lacks %q", want)
		}
	}
	if strings.Contains(page, "No secrets yet") {
		t.Error("/secrets says there are no secrets while the config needs two")
	}

	b.mustStepUp(a, auth.One(auth.ActionSetSecret, 0, "ha_token"))
	mustOK(t, "set ha_token", b.htmx(http.MethodPost, "/secrets", url.Values{"name": {"ha_token"}, "value": {"x"}}))
	page = b.get("/secrets").Body.String()
	for _, want := range []string{
		"1 secret the config refers to is", `<span class="badge sealed">set</span>`,
		"Delete <code>ha_token</code>? These servers stop until it is set again:", ">Delete ha_token</button>",
	} {
		if !strings.Contains(page, want) {
			t.Errorf("/secrets after setting one lacks %q", want)
		}
	}
	begin := b.beginStepUp(auth.One(auth.ActionDeleteSecret, 0, "ha_token"))
	if !strings.Contains(begin.Prompt, "delete the secret “ha_token”") || !strings.Contains(begin.Prompt, "climate, lights") {
		t.Errorf("the prompt does not name the secret and the servers that stop: %q", begin.Prompt)
	}
}
