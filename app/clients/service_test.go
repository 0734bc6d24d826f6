package clients_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/uptrace/bun"

	"maven/app/activity"
	"maven/app/auth"
	"maven/app/auth/authtest"
	"maven/app/clients"
	"maven/db"
	"maven/internal/testkit/testclock"
	"maven/internal/testkit/testdb"
)

const origin = "https://maven.example"

var resource = clients.ResourceOf(origin)

type fixture struct {
	svc   *clients.Service
	db    *bun.DB
	clock *testclock.Clock
	feed  *activity.Log
}

// newFixture is a Service over a real database in a temporary directory, its clock at now.
func newFixture(t testing.TB) *fixture {
	t.Helper()
	bdb := testdb.Open(t)
	c := testclock.New(time.Now())
	feed := activity.New(db.NewActivityStore(bdb), c.Now)
	svc, err := clients.New(context.Background(), db.NewClientStore(bdb), db.NewSettingsStore(bdb),
		clients.Options{Origins: []string{origin, "http://localhost:8080"}, Activity: feed, Now: c.Now})
	if err != nil {
		t.Fatal(err)
	}
	return &fixture{svc: svc, db: bdb, clock: c, feed: feed}
}

// actions are the feed's actions, oldest first.
func (f *fixture) actions(t *testing.T) []string {
	t.Helper()
	page, err := f.feed.Query(context.Background(), activity.Filter{Limit: activity.MaxLimit})
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range slices.Backward(page.Entries) {
		out = append(out, e.Action)
	}
	return out
}

// TestStaticTokenIsShownOnceAndStoredHashed: `maven client add` issues an opaque token of 256
// random bits, kept only as its SHA-256; it opens Maven's MCP server (/mcp and /sse) wherever it
// reaches it, as the voice token does, and nothing else, until revoked; a name comes back after
// a revocation with a new token.
func TestStaticTokenIsShownOnceAndStoredHashed(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	token, c, err := f.svc.AddStatic(ctx, "Claude Code", clients.Choice{ToolIDs: []int64{3, 1, 3}})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(token, "mvn_client_") || len(token) < len("mvn_client_")+43 {
		t.Fatalf("token %q is not an opaque 256-bit token", token)
	}
	if c.ID != "static:Claude Code" || c.Kind != clients.KindStatic || !slices.Equal(c.ToolIDs, []int64{1, 3}) {
		t.Fatalf("client = %+v", c)
	}
	stored, err := f.svc.Client(ctx, c.ID)
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256([]byte(token))
	if !bytes.Equal(stored.SecretHash, sum[:]) {
		t.Errorf("stored hash %x, want the token's SHA-256", stored.SecretHash)
	}
	path := dbPath(t, f.db)
	for _, file := range []string{path, path + "-wal"} {
		if b, _ := os.ReadFile(file); bytes.Contains(b, []byte(token)) || bytes.Contains(b, []byte(strings.TrimPrefix(token, "mvn_client_"))) {
			t.Errorf("%s holds the token itself", filepath.Base(file))
		}
	}

	for _, res := range []string{resource, "http://localhost:8080/mcp", origin + "/sse", "http://192.168.1.5:8080/mcp"} {
		g, err := f.svc.Authenticate(ctx, token, res)
		if err != nil || g.ClientID != c.ID || g.Name != "Claude Code" || g.AllTools || !slices.Equal(g.ToolIDs, []int64{1, 3}) || !g.Expires.IsZero() {
			t.Errorf("Authenticate at %s = %+v, %v", res, g, err)
		}
	}
	for name, tc := range map[string]struct{ token, resource string }{
		"another path":       {token, origin + "/sse/mcp"},
		"the root":           {token, origin},
		"a query":            {token, origin + "/mcp?x=1"},
		"a token one off":    {token[:len(token)-1] + "x", resource},
		"the token's prefix": {"mvn_client_", resource},
		"empty":              {"", resource},
	} {
		if _, err := f.svc.Authenticate(ctx, tc.token, tc.resource); !errors.Is(err, clients.ErrInvalidToken) {
			t.Errorf("%s: Authenticate = %v, want ErrInvalidToken", name, err)
		}
	}

	if _, _, err := f.svc.AddStatic(ctx, "Claude Code", clients.Choice{All: true}); !errors.Is(err, clients.ErrExists) {
		t.Errorf("a second client of the same name: %v, want ErrExists", err)
	}
	if err := f.svc.Revoke(ctx, c.ID, "cli"); err != nil {
		t.Fatal(err)
	}
	if _, err := f.svc.Authenticate(ctx, token, resource); !errors.Is(err, clients.ErrInvalidToken) {
		t.Errorf("a revoked token: %v, want ErrInvalidToken", err)
	}
	if _, err := f.svc.Policy(ctx, c.ID); !errors.Is(err, clients.ErrNotFound) {
		t.Errorf("Policy of a revoked client: %v, want ErrNotFound", err)
	}
	again, _, err := f.svc.AddStatic(ctx, "Claude Code", clients.Choice{All: true})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.svc.Authenticate(ctx, token, resource); !errors.Is(err, clients.ErrInvalidToken) {
		t.Errorf("the old token after the name came back: %v, want ErrInvalidToken", err)
	}
	if g, err := f.svc.Authenticate(ctx, again, resource); err != nil || !g.AllTools {
		t.Errorf("the new token: %+v, %v", g, err)
	}
	if got, want := f.actions(t), []string{clients.ActionAdded, clients.ActionRevoked, clients.ActionAdded}; !slices.Equal(got, want) {
		t.Errorf("feed = %v, want %v", got, want)
	}
}

// TestStaticTokensSurviveARestart: the hashes are loaded again by a new Service.
func TestStaticTokensSurviveARestart(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	token, _, err := f.svc.AddStatic(ctx, "desk", clients.Choice{All: true})
	if err != nil {
		t.Fatal(err)
	}
	again, err := clients.New(ctx, db.NewClientStore(f.db), db.NewSettingsStore(f.db), clients.Options{Origins: []string{origin}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := again.Authenticate(ctx, token, resource); err != nil {
		t.Errorf("after a restart: %v", err)
	}
}

// TestAddStaticRefusesBadNames: a name is visible text of at most 64 characters.
func TestAddStaticRefusesBadNames(t *testing.T) {
	f := newFixture(t)
	for _, name := range []string{"", " padded", "tab\tname", "zero\u200bwidth", strings.Repeat("x", 65)} {
		if _, _, err := f.svc.AddStatic(context.Background(), name, clients.Choice{All: true}); !errors.Is(err, clients.ErrInvalid) {
			t.Errorf("AddStatic(%q) = %v, want ErrInvalid", name, err)
		}
	}
}

// TestFindByIDOrName: revoke takes an id or the name of one client.
func TestFindByIDOrName(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	if _, _, err := f.svc.AddStatic(ctx, "desk", clients.Choice{All: true}); err != nil {
		t.Fatal(err)
	}
	reg, err := f.svc.Register(ctx, clients.Registration{ClientName: "desk", RedirectURIs: []string{"https://a.example/cb"}, TokenEndpointAuthMethod: "none"})
	if err != nil {
		t.Fatal(err)
	}
	if c, err := f.svc.Find(ctx, "static:desk"); err != nil || c.Kind != clients.KindStatic {
		t.Errorf("Find(static:desk) = %+v, %v", c, err)
	}
	if c, err := f.svc.Find(ctx, reg.ClientID); err != nil || c.Kind != clients.KindRegistered {
		t.Errorf("Find(id) = %+v, %v", c, err)
	}
	if _, err := f.svc.Find(ctx, "desk"); !errors.Is(err, clients.ErrAmbiguous) {
		t.Errorf("Find(desk) = %v, want ErrAmbiguous", err)
	}
	if _, err := f.svc.Find(ctx, "nobody"); !errors.Is(err, clients.ErrNotFound) {
		t.Errorf("Find(nobody) = %v, want ErrNotFound", err)
	}
}

// TestRegistration: a public client gets no secret; a confidential one a secret that never
// expires (client_secret_expires_at 0, which Home Assistant requires); metadata that would send
// a code somewhere unsafe, or ask for more than the code flow, is refused with RFC 7591's codes.
func TestRegistration(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	pub, err := f.svc.Register(ctx, clients.Registration{RedirectURIs: []string{"http://127.0.0.1:33418/cb"},
		TokenEndpointAuthMethod: "none", GrantTypes: []string{"refresh_token", "authorization_code"}, ClientName: "VS Code"})
	if err != nil {
		t.Fatal(err)
	}
	if pub.ClientSecret != "" || pub.ClientSecretExpiresAt != nil || pub.TokenEndpointAuthMethod != "none" || pub.ClientID == "" {
		t.Errorf("public registration = %+v", pub)
	}
	conf, err := f.svc.Register(ctx, clients.Registration{RedirectURIs: []string{"https://my.home-assistant.io/redirect/oauth"},
		ClientName: "Home Assistant", GrantTypes: []string{"authorization_code", "refresh_token"}, ResponseTypes: []string{"code"}})
	if err != nil {
		t.Fatal(err)
	}
	b, _ := json.Marshal(conf)
	if conf.ClientSecret == "" || conf.TokenEndpointAuthMethod != "client_secret_basic" || !strings.Contains(string(b), `"client_secret_expires_at":0`) {
		t.Errorf("confidential registration = %s", b)
	}
	c, err := f.svc.Client(ctx, conf.ClientID)
	if err != nil || c.State != clients.StatePending || c.Kind != clients.KindRegistered {
		t.Errorf("the registered client = %+v, %v", c, err)
	}

	for name, tc := range map[string]struct {
		r    clients.Registration
		code string
	}{
		"no redirect":         {clients.Registration{}, "invalid_redirect_uri"},
		"plain http afar":     {clients.Registration{RedirectURIs: []string{"http://evil.example/cb"}}, "invalid_redirect_uri"},
		"a fragment":          {clients.Registration{RedirectURIs: []string{"https://a.example/cb#x"}}, "invalid_redirect_uri"},
		"javascript":          {clients.Registration{RedirectURIs: []string{"javascript:alert(1)"}}, "invalid_redirect_uri"},
		"relative":            {clients.Registration{RedirectURIs: []string{"/cb"}}, "invalid_redirect_uri"},
		"a user":              {clients.Registration{RedirectURIs: []string{"https://u:p@a.example/cb"}}, "invalid_redirect_uri"},
		"implicit":            {clients.Registration{RedirectURIs: []string{"https://a.example/cb"}, ResponseTypes: []string{"token"}}, "invalid_client_metadata"},
		"client credentials":  {clients.Registration{RedirectURIs: []string{"https://a.example/cb"}, GrantTypes: []string{"client_credentials"}}, "invalid_client_metadata"},
		"private_key_jwt":     {clients.Registration{RedirectURIs: []string{"https://a.example/cb"}, TokenEndpointAuthMethod: "private_key_jwt"}, "invalid_client_metadata"},
		"a name too long":     {clients.Registration{RedirectURIs: []string{"https://a.example/cb"}, ClientName: strings.Repeat("n", 101)}, "invalid_client_metadata"},
		"refresh alone":       {clients.Registration{RedirectURIs: []string{"https://a.example/cb"}, GrantTypes: []string{"refresh_token"}}, "invalid_client_metadata"},
		"eleven redirect URI": {clients.Registration{RedirectURIs: slices.Repeat([]string{"https://a.example/cb"}, 11)}, "invalid_redirect_uri"},
	} {
		_, err := f.svc.Register(ctx, tc.r)
		var me *clients.MetadataError
		if !errors.As(err, &me) || me.Code != tc.code || !errors.Is(err, clients.ErrInvalid) {
			t.Errorf("%s: Register = %v, want %s", name, err, tc.code)
		}
	}
}

// TestRegistrationFloodIsBounded: registrations never consented to are capped at 100, none of
// them is evicted for a newer one (the owner's consent in progress survives a flood), and they
// are gone 15 minutes after they came, so a flood cannot grow the database.
func TestRegistrationFloodIsBounded(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	reg := clients.Registration{RedirectURIs: []string{"https://a.example/cb"}, TokenEndpointAuthMethod: "none"}
	first, err := f.svc.Register(ctx, reg)
	if err != nil {
		t.Fatal(err)
	}
	for i := 1; i < clients.MaxPending; i++ {
		f.clock.Advance(time.Second)
		if _, err := f.svc.Register(ctx, reg); err != nil {
			t.Fatalf("registration %d: %v", i+1, err)
		}
	}
	for range 50 {
		if _, err := f.svc.Register(ctx, reg); !errors.Is(err, clients.ErrTooMany) {
			t.Fatalf("a registration past the cap: %v, want ErrTooMany", err)
		}
	}
	if _, err := f.svc.Client(ctx, first.ClientID); err != nil {
		t.Errorf("the first registration was evicted by the flood: %v", err)
	}
	if n := countRows(t, f.db, "clients"); n != clients.MaxPending {
		t.Errorf("%d clients stored, want %d", n, clients.MaxPending)
	}

	// The first expire 15 minutes after they came; a new one takes a freed place.
	f.clock.Advance(clients.PendingLifetime - time.Duration(clients.MaxPending-2)*time.Second)
	if _, err := f.svc.Register(ctx, reg); err != nil {
		t.Fatalf("a registration once the first expired: %v", err)
	}
	if _, err := f.svc.Client(ctx, first.ClientID); !errors.Is(err, clients.ErrNotFound) {
		t.Errorf("the first registration outlived 15 minutes: %v", err)
	}
	f.clock.Advance(clients.PendingLifetime + time.Second)
	if err := f.svc.Sweep(ctx); err != nil {
		t.Fatal(err)
	}
	if n := countRows(t, f.db, "clients"); n != 0 {
		t.Errorf("%d clients left once every registration expired", n)
	}
}

// dbPath is the file the database is in.
func dbPath(t *testing.T, bdb *bun.DB) string {
	t.Helper()
	var seq int
	var name, file string
	if err := bdb.QueryRow("PRAGMA database_list").Scan(&seq, &name, &file); err != nil {
		t.Fatal(err)
	}
	return file
}

func countRows(t *testing.T, bdb *bun.DB, table string) int {
	t.Helper()
	var n int
	if err := bdb.QueryRow("SELECT count(*) FROM " + table).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

// TestSetToolsNeedsAStepUpNamingTheSet: a client's tools change only with a step-up that names
// the client and exactly the new set; its agents are told at once.
func TestSetToolsNeedsAStepUpNamingTheSet(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	_, c, err := f.svc.AddStatic(ctx, "desk", clients.Choice{All: true})
	if err != nil {
		t.Fatal(err)
	}
	if g, err := f.svc.Policy(ctx, c.ID); err != nil || !g.AllTools {
		t.Fatalf("Policy before = %+v, %v", g, err)
	}
	var told []string
	f.svc.OnChange(func(id string) { told = append(told, id) })
	want := clients.Choice{ToolIDs: []int64{2, 5}}
	for name, proof := range map[string]auth.StepUp{
		"no proof":        {},
		"another set":     authtest.Proof(t, auth.One(auth.ActionClientTools, 0, clients.ToolsDigest(c.ID, clients.Choice{ToolIDs: []int64{2}}))),
		"another client":  authtest.Proof(t, auth.One(auth.ActionClientTools, 0, clients.ToolsDigest("static:other", want))),
		"another action":  authtest.Proof(t, auth.One(auth.ActionConsentClient, 0, clients.ToolsDigest(c.ID, want))),
		"every tool, now": authtest.Proof(t, auth.One(auth.ActionClientTools, 0, clients.ToolsDigest(c.ID, clients.Choice{All: true}))),
	} {
		if err := f.svc.SetTools(ctx, c.ID, want, proof); !errors.Is(err, auth.ErrStepUpRequired) {
			t.Errorf("%s: SetTools = %v, want ErrStepUpRequired", name, err)
		}
	}
	proof := authtest.Proof(t, auth.One(auth.ActionClientTools, 0, clients.ToolsDigest(c.ID, clients.Choice{ToolIDs: []int64{5, 2}})))
	if err := f.svc.SetTools(ctx, c.ID, want, proof); err != nil {
		t.Fatal(err)
	}
	g, err := f.svc.Policy(ctx, c.ID)
	if err != nil || g.AllTools || !slices.Equal(g.ToolIDs, []int64{2, 5}) {
		t.Errorf("Policy = %+v, %v", g, err)
	}
	if !slices.Equal(told, []string{c.ID}) {
		t.Errorf("OnChange told %v, want %v", told, []string{c.ID})
	}
}
