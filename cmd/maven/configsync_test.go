package main

import (
	"context"
	"log/slog"
	"slices"
	"testing"
	"time"

	"maven/app/activity"
	"maven/app/allowlist"
	"maven/app/config"
	"maven/app/oauth"
	"maven/app/vault"
	"maven/db"
	"maven/internal/testkit/testdb"
)

// TestRemovedServersLoseTheirSealedSignIns: a config read from a file that no longer names a
// server forgets the server's sealed OAuth credentials, while locked too, and records it in the
// activity feed; a server it names keeps its own, and the defaults (no file) forget nothing.
func TestRemovedServersLoseTheirSealedSignIns(t *testing.T) {
	ctx := context.Background()
	bdb := testdb.Open(t)
	gate, err := vault.NewGate(ctx, vault.New(db.NewVaultStore(bdb), "localhost", time.Now), nil)
	if err != nil {
		t.Fatal(err)
	}
	in, err := vault.NewPRFInput()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := gate.Enroll(ctx, []byte("cred"), in, in); err != nil {
		t.Fatal(err)
	}
	for _, server := range []string{"kept", "gone"} {
		if err := gate.SealOAuth(ctx, server, []byte(`{"client_id": "c"}`)); err != nil {
			t.Fatal(err)
		}
	}
	gate.Lock()
	feed := activity.New(db.NewActivityStore(bdb), time.Now)
	logger := slog.New(slog.DiscardHandler)
	configs := &configSync{tools: allowlist.NewService(db.NewToolStore(bdb), time.Now),
		signIns: oauth.New(gate, feed, oauth.Options{Logger: logger}), problems: &config.Problems{}, log: logger}
	cfg := config.Config{MCPServers: map[string]config.Server{"kept": {Type: config.TransportHTTP, URL: "http://127.0.0.1:1/mcp"}}}

	if err := configs.apply(ctx, cfg, false); err != nil {
		t.Fatal(err)
	}
	if got, _ := gate.OAuthServers(ctx); !slices.Equal(got, []string{"gone", "kept"}) {
		t.Fatalf("the defaults forgot sign-ins: %v left", got)
	}
	if err := configs.apply(ctx, cfg, true); err != nil {
		t.Fatal(err)
	}
	if got, _ := gate.OAuthServers(ctx); !slices.Equal(got, []string{"kept"}) {
		t.Fatalf("sealed sign-ins after the config dropped a server: %v, want [kept]", got)
	}
	page, err := feed.Query(ctx, activity.Filter{Action: activity.ActionSignInForgotten})
	if err != nil {
		t.Fatal(err)
	}
	if len(page.Entries) != 1 || page.Entries[0].Actor != "config" || string(page.Entries[0].Detail) != `{"server":"gone"}` {
		t.Fatalf("activity: %+v, want one oauth_forgotten of gone by config", page.Entries)
	}
}
