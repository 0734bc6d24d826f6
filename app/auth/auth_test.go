package auth_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/go-webauthn/webauthn/protocol"

	"maven/app/auth"
	"maven/app/auth/authtest"
	"maven/db"
	"maven/internal/testkit/testclock"
	"maven/internal/testkit/testdb"
)

const origin = "http://localhost:8080"

func newService(t *testing.T) (*auth.Service, *testclock.Clock) {
	t.Helper()
	clk := testclock.New(time.Now())
	s, err := auth.New(db.NewAuthStore(testdb.Open(t)), auth.Config{
		RPID: "localhost", Origins: []string{origin}, StepUpWindow: 5 * time.Minute, Now: clk.Now,
	})
	if err != nil {
		t.Fatal(err)
	}
	return s, clk
}

// must unwraps a value in test set-up code; a set-up failure panics with the error, which the
// test binary reports with its stack.
func must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}

// register sets up the owner's first passkey on a, through a setup link, in session sid.
func register(t *testing.T, s *auth.Service, a *authtest.Authenticator, sid string) auth.Passkey {
	t.Helper()
	ctx := context.Background()
	link := must(s.NewSetupLink(ctx, "test"))
	creation := must(s.BeginSetup(ctx, sid, origin, link.Token))
	resp := must(a.Create(must(json.Marshal(creation))))
	parsed := must(protocol.ParseCredentialCreationResponseBytes(resp))
	return must(s.FinishRegistration(ctx, sid, parsed, "first"))
}

// stepUp performs a step-up for approval in session sid.
func stepUp(t *testing.T, s *auth.Service, a *authtest.Authenticator, sid string, approval auth.Approval) error {
	t.Helper()
	ctx := context.Background()
	assertion := must(s.BeginStepUp(ctx, sid, origin, approval))
	resp := must(a.Get(must(json.Marshal(assertion))))
	parsed := must(protocol.ParseCredentialRequestResponseBytes(resp))
	_, err := s.FinishStepUp(ctx, sid, parsed)
	return err
}

// enable7 is the approval of enabling row 7 shown with fingerprint "sha256:7".
var enable7 = auth.One(auth.ActionEnableTool, 7, "sha256:7")

func TestRedeemIsBoundSpentOnceAndWindowed(t *testing.T) {
	s, clk := newService(t)
	a := authtest.New(origin)
	register(t, s, a, "s1")

	if _, err := s.Redeem("s1", enable7); !errors.Is(err, auth.ErrStepUpRequired) {
		t.Fatalf("redeem without step-up: %v", err)
	}
	if err := stepUp(t, s, a, "s1", enable7); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name     string
		sid      string
		approval auth.Approval
	}{
		{"another row", "s1", auth.One(auth.ActionEnableTool, 8, "sha256:7")},
		{"another shape of the row", "s1", auth.One(auth.ActionEnableTool, 7, "sha256:8")},
		{"another action", "s1", auth.One(auth.ActionRemovePasskey, 7, "")},
		{"a batch holding the row", "s1", auth.Approval{Action: auth.ActionEnableTool, Items: []auth.Item{{Target: 7, Digest: "sha256:7"}, {Target: 8, Digest: "sha256:8"}}}},
		{"another session", "s2", enable7},
	} {
		if _, err := s.Redeem(c.sid, c.approval); !errors.Is(err, auth.ErrStepUpRequired) {
			t.Errorf("%s: redeemed with a grant for s1's %+v: %v", c.name, enable7, err)
		}
	}
	clk.Advance(4*time.Minute + 59*time.Second)
	proof, err := s.Redeem("s1", enable7)
	if err != nil || !proof.Approves(auth.ActionEnableTool, auth.Item{Target: 7, Digest: "sha256:7"}) ||
		proof.Approves(auth.ActionEnableTool, auth.Item{Target: 7, Digest: "sha256:8"}) || proof.Approves(auth.ActionEnableTool, auth.Item{Target: 8, Digest: "sha256:7"}) {
		t.Fatalf("redeem in the window (failed redemptions must not spend it): %v %+v", err, proof)
	}
	if d, ok := proof.Shown(auth.ActionEnableTool, 7); !ok || d != "sha256:7" {
		t.Fatalf("Shown = %q, %v", d, ok)
	}
	if _, err := s.Redeem("s1", enable7); !errors.Is(err, auth.ErrStepUpRequired) {
		t.Fatalf("a grant was spent twice: %v", err)
	}

	if err := stepUp(t, s, a, "s1", enable7); err != nil {
		t.Fatal(err)
	}
	clk.Advance(5 * time.Minute)
	if _, err := s.Redeem("s1", enable7); !errors.Is(err, auth.ErrStepUpRequired) {
		t.Fatalf("redeem at the end of the window: %v", err)
	}
}

func TestBatchApprovalNamesEveryItemInAnyOrder(t *testing.T) {
	s, _ := newService(t)
	a := authtest.New(origin)
	register(t, s, a, "s1")
	batch := auth.Approval{Action: auth.ActionEnableTool, Items: []auth.Item{{Target: 9, Digest: "sha256:9"}, {Target: 3, Digest: "sha256:3"}}}
	if err := stepUp(t, s, a, "s1", batch); err != nil {
		t.Fatal(err)
	}
	reordered := auth.Approval{Action: auth.ActionEnableTool, Items: []auth.Item{batch.Items[1], batch.Items[0]}}
	proof, err := s.Redeem("s1", reordered)
	if err != nil {
		t.Fatal(err)
	}
	got := proof.Approval()
	if len(got.Items) != 2 || got.Items[0] != (auth.Item{Target: 3, Digest: "sha256:3"}) || got.Items[1] != (auth.Item{Target: 9, Digest: "sha256:9"}) {
		t.Fatalf("the proof names %+v", got)
	}
	for _, it := range batch.Items {
		if !proof.Approves(auth.ActionEnableTool, it) {
			t.Errorf("the batch proof does not approve %+v", it)
		}
	}
}

func TestStepUpChallengeIsBoundToTheApproval(t *testing.T) {
	s, _ := newService(t)
	a := authtest.New(origin)
	register(t, s, a, "s1")
	ctx := context.Background()
	challenge := func(approval auth.Approval) []byte {
		assertion := must(s.BeginStepUp(ctx, "s1", origin, approval))
		return assertion.Response.Challenge
	}
	c1, c2 := challenge(enable7), challenge(enable7)
	other := challenge(auth.One(auth.ActionEnableTool, 7, "sha256:8"))
	if len(c1) != 64 || string(c1[32:]) != string(c2[32:]) || string(c1[:32]) == string(c2[:32]) {
		t.Fatalf("challenges %x, %x: want fresh randomness, then the same binding", c1, c2)
	}
	if string(other[32:]) == string(c1[32:]) {
		t.Fatal("another fingerprint gives the same binding")
	}
	// The assertion signed over that challenge completes only the ceremony it was begun for.
	resp := must(a.Get(must(json.Marshal(must(s.BeginStepUp(ctx, "s1", origin, enable7))))))
	must(s.BeginStepUp(ctx, "s1", origin, auth.One(auth.ActionEnableTool, 7, "sha256:8")))
	if _, err := s.FinishStepUp(ctx, "s1", must(protocol.ParseCredentialRequestResponseBytes(resp))); !errors.Is(err, auth.ErrVerificationFailed) {
		t.Fatalf("an assertion over one approval's challenge finished another's: %v", err)
	}
	if _, err := s.Redeem("s1", enable7); !errors.Is(err, auth.ErrStepUpRequired) {
		t.Fatalf("granted: %v", err)
	}
}

func TestEndSessionAndLockForgetGrants(t *testing.T) {
	s, _ := newService(t)
	a := authtest.New(origin)
	register(t, s, a, "s1")
	for _, sid := range []string{"s1", "s2", "s3"} {
		if err := stepUp(t, s, a, sid, enable7); err != nil {
			t.Fatal(err)
		}
	}
	s.EndSession("s1")
	if _, err := s.Redeem("s1", enable7); !errors.Is(err, auth.ErrStepUpRequired) {
		t.Fatal("EndSession kept its session's grant")
	}
	if _, err := s.Redeem("s2", enable7); err != nil {
		t.Fatalf("EndSession of s1 dropped s2's grant: %v", err)
	}
	s.ForgetStepUps()
	if _, err := s.Redeem("s3", enable7); !errors.Is(err, auth.ErrStepUpRequired) {
		t.Fatal("ForgetStepUps kept a grant")
	}
}

func TestFinishWithoutBeginAndReplay(t *testing.T) {
	s, _ := newService(t)
	a := authtest.New(origin)
	register(t, s, a, "s1")
	ctx := context.Background()
	if _, err := s.FinishStepUp(ctx, "s1", nil); !errors.Is(err, auth.ErrNoCeremony) {
		t.Fatalf("finish without begin: %v", err)
	}
	assertion := must(s.BeginStepUp(ctx, "s1", origin, enable7))
	resp := must(a.Get(must(json.Marshal(assertion))))
	if _, err := s.FinishStepUp(ctx, "s1", nil); !errors.Is(err, auth.ErrVerificationFailed) {
		t.Fatalf("unreadable answer: %v", err)
	}
	parsed := must(protocol.ParseCredentialRequestResponseBytes(resp))
	if _, err := s.FinishStepUp(ctx, "s1", parsed); !errors.Is(err, auth.ErrNoCeremony) {
		t.Fatalf("an unreadable answer did not consume the ceremony: %v", err)
	}
}

func TestBeginRefusesUnconfiguredOriginAndUnknownAction(t *testing.T) {
	s, _ := newService(t)
	register(t, s, authtest.New(origin), "s1")
	ctx := context.Background()
	if _, err := s.BeginLogin(ctx, "s2", "https://evil.example"); !errors.Is(err, auth.ErrBadOrigin) {
		t.Fatalf("login from a foreign origin: %v", err)
	}
	if _, err := s.BeginLogin(ctx, "s2", ""); !errors.Is(err, auth.ErrBadOrigin) {
		t.Fatalf("login without origin: %v", err)
	}
	for _, bad := range []auth.Approval{
		auth.One("format_disk", 1, ""),
		auth.One(auth.ActionEnableTool, 1, ""), // a row is approved as shown, or not at all
		auth.One(auth.ActionSetPhrases, 1, ""), // phrases are saved for the shape shown, too
		{Action: auth.ActionEnableTool},
		auth.One(auth.ActionRemovePasskey, -1, ""),
	} {
		if _, err := s.BeginStepUp(ctx, "s1", origin, bad); !errors.Is(err, auth.ErrUnknownAction) {
			t.Errorf("BeginStepUp(%+v): %v, want ErrUnknownAction", bad, err)
		}
	}
}

func TestSetupLinkRetryInTheSameSession(t *testing.T) {
	s, _ := newService(t)
	ctx := context.Background()
	link := must(s.NewSetupLink(ctx, "test"))
	if err := s.CheckSetupToken(ctx, link.Token); err != nil {
		t.Fatal(err)
	}
	must(s.BeginSetup(ctx, "s1", origin, link.Token))
	// The browser failed; the same session may begin again, another may not.
	must(s.BeginSetup(ctx, "s1", origin, ""))
	if _, err := s.BeginSetup(ctx, "s2", origin, link.Token); !errors.Is(err, auth.ErrSetupLinkInvalid) {
		t.Fatalf("second session used the link: %v", err)
	}
	if err := s.CheckSetupToken(ctx, link.Token); !errors.Is(err, auth.ErrSetupLinkInvalid) {
		t.Fatalf("used link still checks: %v", err)
	}
}

// TestNewSetupLinkVoidsTheEarlierOnes: a new setup link voids every earlier one, one not yet
// used and one a session used but has not registered with yet, in the database and in the
// in-memory store alike.
func TestNewSetupLinkVoidsTheEarlierOnes(t *testing.T) {
	dbBacked, _ := newService(t)
	inMemory := must(auth.New(authtest.NewStore(), auth.Config{RPID: "localhost", Origins: []string{origin}}))
	for name, s := range map[string]*auth.Service{"db": dbBacked, "authtest": inMemory} {
		ctx := context.Background()
		unused := must(s.NewSetupLink(ctx, "test"))
		redeemed := must(s.NewSetupLink(ctx, "test"))
		must(s.BeginSetup(ctx, "s1", origin, redeemed.Token))
		if err := s.CheckSetupToken(ctx, unused.Token); !errors.Is(err, auth.ErrSetupLinkInvalid) {
			t.Errorf("%s: the first link still works after the second: %v", name, err)
		}
		fresh := must(s.NewSetupLink(ctx, "test"))
		if _, err := s.BeginSetup(ctx, "s1", origin, ""); !errors.Is(err, auth.ErrSetupLinkInvalid) {
			t.Errorf("%s: a session that used an earlier link may still register: %v", name, err)
		}
		if err := s.CheckSetupToken(ctx, fresh.Token); err != nil {
			t.Errorf("%s: the newest link: %v", name, err)
		}
		must(s.BeginSetup(ctx, "s2", origin, fresh.Token))
	}
}

func TestAddPasskeyNeedsItsOwnProof(t *testing.T) {
	s, _ := newService(t)
	a := authtest.New(origin)
	register(t, s, a, "s1")
	ctx := context.Background()
	if _, err := s.BeginAddPasskey(ctx, "s1", origin, auth.StepUp{}); !errors.Is(err, auth.ErrStepUpRequired) {
		t.Fatalf("add with no proof: %v", err)
	}
	if _, err := s.BeginAddPasskey(ctx, "s1", origin, authtest.Proof(t, auth.One(auth.ActionRotateRecovery, 0, ""))); !errors.Is(err, auth.ErrStepUpRequired) {
		t.Fatalf("add with another action's proof: %v", err)
	}
	if err := s.RemovePasskey(ctx, 1, authtest.Proof(t, auth.One(auth.ActionRemovePasskey, 2, ""))); !errors.Is(err, auth.ErrStepUpRequired) {
		t.Fatalf("remove with another passkey's proof: %v", err)
	}
	if _, err := s.BeginAddPasskey(ctx, "s1", origin, authtest.Proof(t, auth.One(auth.ActionAddPasskey, 0, ""))); err != nil {
		t.Fatalf("add with its own proof: %v", err)
	}
}

// TestAnonymousFloodNeverEvictsACeremonyInProgress: anonymous sign-ins are bounded, and when
// their share is full a new one is refused, never one in progress evicted; the owner's step-up
// is counted apart and untouched; expired ceremonies make room again.
func TestAnonymousFloodNeverEvictsACeremonyInProgress(t *testing.T) {
	s, clk := newService(t)
	a := authtest.New(origin)
	register(t, s, a, "owner")
	ctx := context.Background()
	signIn := must(s.BeginLogin(ctx, "phone", origin))
	stepUpOpts := must(s.BeginStepUp(ctx, "owner", origin, enable7))
	clk.Advance(time.Millisecond)
	busy := 0
	for i := range 2000 {
		_, err := s.BeginLogin(ctx, fmt.Sprintf("anon-%d", i), origin)
		switch {
		case errors.Is(err, auth.ErrBusy):
			busy++
		case err != nil:
			t.Fatal(err)
		}
	}
	if busy != 2000-1023 {
		t.Fatalf("%d of 2000 anonymous sign-ins refused, want all beyond the 1024 share", busy)
	}
	finish := func(sid string, opts any, f func(*protocol.ParsedCredentialAssertionData) error) {
		t.Helper()
		resp := must(a.Get(must(json.Marshal(opts))))
		if err := f(must(protocol.ParseCredentialRequestResponseBytes(resp))); err != nil {
			t.Fatalf("%s's ceremony after the flood: %v", sid, err)
		}
	}
	finish("phone", signIn, func(p *protocol.ParsedCredentialAssertionData) error {
		_, err := s.FinishLogin(ctx, "phone", p)
		return err
	})
	finish("owner", stepUpOpts, func(p *protocol.ParsedCredentialAssertionData) error {
		_, err := s.FinishStepUp(ctx, "owner", p)
		return err
	})
	// The owner's step-ups go on while the anonymous share is full.
	if err := stepUp(t, s, a, "owner", enable7); err != nil {
		t.Fatalf("step-up with the anonymous share full: %v", err)
	}
	// Once the flood's ceremonies expire, there is room again.
	clk.Advance(auth.DefaultCeremonyTimeout + time.Second)
	if _, err := s.BeginLogin(ctx, "later", origin); err != nil {
		t.Fatalf("sign-in after the flood expired: %v", err)
	}
}

// TestEpochChangesWithEveryStartAndPasskeyChange: the web layer voids every session of another
// epoch (docs/security.md#req-13).
func TestEpochChangesWithEveryStartAndPasskeyChange(t *testing.T) {
	s, _ := newService(t)
	other, _ := newService(t)
	if s.Epoch() == other.Epoch() {
		t.Fatal("two starts share an epoch")
	}
	a := authtest.New(origin)
	start := s.Epoch()
	register(t, s, a, "s1")
	added := s.Epoch()
	if added == start {
		t.Fatal("adding a passkey kept the epoch")
	}
	ctx := context.Background()
	register2 := func() {
		link := must(s.NewSetupLink(ctx, "test"))
		creation := must(s.BeginSetup(ctx, "s2", origin, link.Token))
		parsed := must(protocol.ParseCredentialCreationResponseBytes(must(authtest.New(origin).Create(must(json.Marshal(creation))))))
		must(s.FinishRegistration(ctx, "s2", parsed, "second"))
	}
	register2()
	if err := s.RemovePasskey(ctx, 2, authtest.Proof(t, auth.One(auth.ActionRemovePasskey, 2, ""))); err != nil {
		t.Fatal(err)
	}
	if s.Epoch() == added {
		t.Fatal("removing a passkey kept the epoch")
	}
	now := s.Epoch()
	if _, err := s.RenamePasskey(ctx, 1, "renamed"); err != nil || s.Epoch() != now {
		t.Fatalf("renaming changed the epoch: %v", err)
	}
}
