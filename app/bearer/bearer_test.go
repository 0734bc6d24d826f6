package bearer_test

import (
	"context"
	"strings"
	"testing"

	"maven/app/bearer"
	"maven/db"
	"maven/internal/testkit/testdb"
)

func TestTokens(t *testing.T) {
	ctx := context.Background()
	store := db.NewSettingsStore(testdb.Open(t))
	voice, err := bearer.New(ctx, store, "voice")
	if err != nil {
		t.Fatal(err)
	}
	metrics, _ := bearer.New(ctx, store, "metrics")
	if voice.Check("") || voice.Check("anything") {
		t.Fatal("no token issued, yet a check passed")
	}
	first, err := voice.Rotate(ctx)
	if err != nil || len(first) < 40 || !strings.HasPrefix(first, "mvn_voice_") {
		t.Fatalf("rotate: %q %v", first, err)
	}
	if !voice.Check(first) || voice.Check(first+"x") || voice.Check(first[:len(first)-1]) {
		t.Fatal("check does not compare exactly")
	}
	if metrics.Check(first) {
		t.Fatal("the voice token opens the metrics endpoint")
	}
	second, _ := voice.Rotate(ctx)
	if voice.Check(first) || !voice.Check(second) {
		t.Fatal("the old token still works after rotation")
	}
	// Only the hash is stored, and it survives a restart.
	hash, _ := store.Setting(ctx, "voice_token_sha256")
	if strings.Contains(hash, second) || len(hash) != 64 {
		t.Fatalf("stored %q", hash)
	}
	again, err := bearer.New(ctx, store, "voice")
	if err != nil || !again.Check(second) {
		t.Fatalf("after reload: %v", err)
	}
}
