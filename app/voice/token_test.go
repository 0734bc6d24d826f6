package voice_test

import (
	"context"
	"path/filepath"
	"strings"
	"testing"

	"maven/app/voice"
	"maven/db"
)

func TestTokens(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "maven.db")
	bdb, err := db.Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	defer bdb.Close()
	toks, err := voice.NewTokens(ctx, db.NewSettingsStore(bdb))
	if err != nil {
		t.Fatal(err)
	}
	if toks.Check("") || toks.Check("anything") {
		t.Fatal("no token issued, yet a check passed")
	}
	first, err := toks.Rotate(ctx)
	if err != nil || len(first) < 40 || !strings.HasPrefix(first, "mvt_") {
		t.Fatalf("rotate: %q %v", first, err)
	}
	if !toks.Check(first) || toks.Check(first+"x") || toks.Check(first[:len(first)-1]) {
		t.Fatal("check does not compare exactly")
	}
	second, _ := toks.Rotate(ctx)
	if toks.Check(first) || !toks.Check(second) {
		t.Fatal("the old token still works after rotation")
	}
	// Only the hash is stored, and it survives a restart.
	hash, _ := db.NewSettingsStore(bdb).VoiceTokenHash(ctx)
	if strings.Contains(hash, second) || len(hash) != 64 {
		t.Fatalf("stored %q", hash)
	}
	again, err := voice.NewTokens(ctx, db.NewSettingsStore(bdb))
	if err != nil || !again.Check(second) {
		t.Fatalf("after reload: %v", err)
	}
}
