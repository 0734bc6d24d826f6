package auth_test

import (
	"context"
	"encoding/base64"
	"path/filepath"
	"testing"
	"time"

	"maven/app/auth"
	"maven/db"
	"maven/internal/testkit/testclock"
)

// TestBrowserMarkers: a marker names its browser across a restart (the key is in the database),
// keeps its id when issued again, and is refused when it is anything else: altered, signed by
// another database's key, too old, or not a marker at all.
func TestBrowserMarkers(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	clk := testclock.New(time.Now())
	boot := func(name string) *auth.Service {
		bdb, err := db.Open(ctx, filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { bdb.Close() })
		return must(auth.New(db.NewAuthStore(bdb), auth.Config{RPID: "localhost", Origins: []string{origin}, Now: clk.Now}))
	}
	s := boot("maven.db")
	marker := must(s.RememberBrowser(ctx, ""))
	id, ok := s.KnownBrowser(ctx, marker)
	if !ok || id == "" {
		t.Fatalf("a fresh marker is not known: %q %v", id, ok)
	}
	if other := must(s.RememberBrowser(ctx, "")); other == marker {
		t.Fatal("two browsers got one marker")
	}

	restarted := boot("maven.db")
	if again, ok := restarted.KnownBrowser(ctx, marker); !ok || again != id {
		t.Fatalf("after a restart: %q %v, want %q", again, ok, id)
	}
	clk.Advance(24 * time.Hour)
	renewed := must(restarted.RememberBrowser(ctx, marker))
	if got, ok := restarted.KnownBrowser(ctx, renewed); renewed == marker || !ok || got != id {
		t.Fatalf("issued again: %q %v, want a new marker of id %q", got, ok, id)
	}

	raw, _ := base64.RawURLEncoding.DecodeString(marker)
	altered := append([]byte(nil), raw...)
	altered[0] ^= 1
	for name, m := range map[string]string{
		"altered":            base64.RawURLEncoding.EncodeToString(altered),
		"cut short":          base64.RawURLEncoding.EncodeToString(raw[:len(raw)-1]),
		"not base64":         "not a marker!",
		"empty":              "",
		"another database's": must(boot("other.db").RememberBrowser(ctx, "")),
	} {
		if id, ok := restarted.KnownBrowser(ctx, m); ok {
			t.Errorf("%s marker is known, as %q", name, id)
		}
	}
	// A marker lives BrowserMarkerLifetime from its issue; a sign-in issues it again.
	clk.Advance(auth.BrowserMarkerLifetime - time.Hour)
	if _, ok := restarted.KnownBrowser(ctx, marker); ok {
		t.Error("a marker past its lifetime is known")
	}
	if _, ok := restarted.KnownBrowser(ctx, renewed); !ok {
		t.Error("the marker issued a day later is past its lifetime before it")
	}
}
