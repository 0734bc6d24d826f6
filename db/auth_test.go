package db_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"maven/app/auth"
	"maven/db"
)

func TestAuthStore(t *testing.T) {
	ctx := context.Background()
	bdb := newDB(t)
	s := db.NewAuthStore(bdb)
	now := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)

	if _, err := s.Owner(ctx); !errors.Is(err, auth.ErrNoOwner) {
		t.Fatalf("owner before any: %v", err)
	}
	first, err := s.EnsureOwner(ctx, auth.Owner{Handle: []byte("handle-1"), CreatedAt: now})
	if err != nil || string(first.Handle) != "handle-1" {
		t.Fatalf("ensure owner: %v %+v", err, first)
	}
	again, err := s.EnsureOwner(ctx, auth.Owner{Handle: []byte("handle-2"), CreatedAt: now})
	if err != nil || string(again.Handle) != "handle-1" {
		t.Fatalf("a second owner replaced the first: %v %+v", err, again)
	}

	yes := true
	p1 := auth.Passkey{CredentialID: []byte("c1"), PublicKey: []byte("k1"), Name: "one", CreatedAt: now, PRFEnabled: &yes, Transports: []string{"usb"}}
	p2 := auth.Passkey{CredentialID: []byte("c2"), PublicKey: []byte("k2"), Name: "two", CreatedAt: now, BackupEligible: true}
	for _, p := range []*auth.Passkey{&p1, &p2} {
		if err := s.InsertPasskey(ctx, p); err != nil {
			t.Fatal(err)
		}
	}
	dup := auth.Passkey{CredentialID: []byte("c1"), PublicKey: []byte("k"), Name: "dup", CreatedAt: now}
	if err := s.InsertPasskey(ctx, &dup); !errors.Is(err, auth.ErrDuplicatePasskey) {
		t.Fatalf("duplicate credential: %v", err)
	}
	got, err := s.Passkey(ctx, p2.ID)
	if err != nil || got.PRFEnabled != nil || !got.BackupEligible || got.Transports == nil {
		t.Fatalf("passkey 2: %v %+v", err, got)
	}
	if err := s.RecordAssertion(ctx, p1.ID, auth.Assertion{SignCount: 7, BackupState: true, UserVerified: true, At: now}); err != nil {
		t.Fatal(err)
	}
	got, _ = s.Passkey(ctx, p1.ID)
	if got.SignCount != 7 || !got.BackupState || !got.UserVerified || !got.LastUsedAt.Equal(now) || !got.CanUnlock() {
		t.Fatalf("after assertion: %+v", got)
	}

	if err := s.DeletePasskey(ctx, 99); !errors.Is(err, auth.ErrPasskeyNotFound) {
		t.Fatalf("delete missing: %v", err)
	}
	if err := s.DeletePasskey(ctx, p1.ID); err != nil {
		t.Fatal(err)
	}
	if err := s.DeletePasskey(ctx, p2.ID); !errors.Is(err, auth.ErrLastPasskey) {
		t.Fatalf("delete last: %v", err)
	}

	hash := []byte("0123456789abcdef0123456789abcdef")
	if err := s.InsertSetupLink(ctx, hash, now, now.Add(15*time.Minute)); err != nil {
		t.Fatal(err)
	}
	if ok, _ := s.SetupLinkUsable(ctx, hash, now.Add(15*time.Minute)); ok {
		t.Fatal("usable at its expiry")
	}
	if err := s.UseSetupLink(ctx, hash, now.Add(time.Minute)); err != nil {
		t.Fatal(err)
	}
	if err := s.UseSetupLink(ctx, hash, now.Add(2*time.Minute)); !errors.Is(err, auth.ErrSetupLinkInvalid) {
		t.Fatalf("second use: %v", err)
	}
}
