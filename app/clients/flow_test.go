package clients_test

import (
	"context"
	"errors"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"

	"github.com/ory/fosite"
	"golang.org/x/oauth2"

	"maven/app/auth"
	"maven/app/auth/authtest"
	"maven/app/clients"
	"maven/db"
)

// token runs the code flow through fosite for the authorization request q of client id: the
// owner allows every tool, and the code is exchanged. It returns the access token.
func (f *fixture) token(t testing.TB, id string, edit func(url.Values)) string {
	t.Helper()
	ctx := context.Background()
	verifier := oauth2.GenerateVerifier()
	q := authorizeQuery(id, func(q url.Values) {
		q.Set("code_challenge", oauth2.S256ChallengeFromVerifier(verifier))
		if edit != nil {
			edit(q)
		}
	})
	ar, res, err := f.parse(q)
	if err != nil {
		t.Fatal(err)
	}
	req, err := f.svc.Begin("s", ar, res)
	if err != nil {
		t.Fatal(err)
	}
	all := clients.Choice{All: true}
	done, err := f.svc.Consent(ctx, "s", req.ID, all, authtest.Proof(t, auth.One(auth.ActionConsentClient, 0, clients.ConsentDigest(req, all))))
	if err != nil {
		t.Fatal(err)
	}
	resp, err := f.svc.Respond(ctx, ar, done)
	if err != nil {
		t.Fatal(err)
	}
	body := url.Values{"grant_type": {"authorization_code"}, "code": {resp.GetCode()}, "client_id": {id},
		"redirect_uri": {redirect}, "code_verifier": {verifier}}
	r := httptest.NewRequest("POST", origin+"/oauth/token", strings.NewReader(body.Encode()))
	r.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	p := f.svc.Provider()
	acc, err := p.NewAccessRequest(ctx, r, clients.NewSession())
	if err != nil {
		t.Fatal(fosite.ErrorToRFC6749Error(err).WithExposeDebug(true).GetDescription())
	}
	out, err := p.NewAccessResponse(ctx, acc)
	if err != nil {
		t.Fatal(err)
	}
	return out.GetAccessToken()
}

// TestTokensAreBoundToOneResource: a token opens Maven's MCP server only at the resource its
// authorization named (or, naming none, at the origin the owner's browser was at), not at
// Maven's other origin; and the database holds its signature, never the token.
func TestTokensAreBoundToOneResource(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	id := f.register(t, "VS Code")
	other := "http://localhost:8080/mcp"
	for name, tc := range map[string]struct {
		edit        func(url.Values)
		good, wrong string
	}{
		"no resource named":    {nil, resource, other},
		"the other one, named": {func(q url.Values) { q.Set("resource", other) }, other, resource},
	} {
		tok := f.token(t, id, tc.edit)
		sse := strings.TrimSuffix(tc.good, "/mcp") + "/sse"
		for _, at := range []string{tc.good, sse} {
			if _, err := f.svc.Authenticate(ctx, tok, at); err != nil {
				t.Errorf("%s: at %s: %v", name, at, err)
			}
		}
		for _, at := range []string{tc.wrong, "http://192.168.1.5:8080/mcp", "https://elsewhere.example/mcp"} {
			if _, err := f.svc.Authenticate(ctx, tok, at); !errors.Is(err, clients.ErrInvalidToken) {
				t.Errorf("%s: at %s: %v, want ErrInvalidToken", name, at, err)
			}
		}
		var n int
		if err := f.db.QueryRow("SELECT count(*) FROM oauth_tokens WHERE signature = ? OR request LIKE ?", tok, "%"+tok+"%").Scan(&n); err != nil || n != 0 {
			t.Errorf("%s: the token itself is stored (%d rows, %v)", name, n, err)
		}
	}
}

// TestTokensSurviveARestart: the secret tokens are keyed with is made once and kept, so a token
// issued before a restart works after it.
func TestTokensSurviveARestart(t *testing.T) {
	f := newFixture(t)
	tok := f.token(t, f.register(t, "VS Code"), nil)
	again, err := clients.New(context.Background(), db.NewClientStore(f.db), db.NewSettingsStore(f.db), clients.Options{Origins: []string{origin}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := again.Authenticate(context.Background(), tok, resource); err != nil {
		t.Errorf("after a restart: %v", err)
	}
}

// BenchmarkAuthenticate is what checking an agent's token costs, on every request: an access
// token Maven issued, and a static token.
func BenchmarkAuthenticate(b *testing.B) {
	f := newFixture(b)
	ctx := context.Background()
	static, _, err := f.svc.AddStatic(ctx, "desk", clients.Choice{All: true})
	if err != nil {
		b.Fatal(err)
	}
	for name, token := range map[string]string{"oauth": f.token(b, f.register(b, "VS Code"), nil), "static": static} {
		b.Run(name, func(b *testing.B) {
			for b.Loop() {
				if _, err := f.svc.Authenticate(ctx, token, resource); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
