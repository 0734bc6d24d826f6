package auth_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/go-webauthn/webauthn/protocol"

	"maven/app/auth"
	"maven/app/auth/authtest"
	"maven/db"
)

const origin = "http://localhost:8080"

type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *clock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

func newService(t *testing.T) (*auth.Service, *clock) {
	t.Helper()
	bdb, err := db.Open(context.Background(), filepath.Join(t.TempDir(), "maven.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { bdb.Close() })
	clk := &clock{t: time.Now()}
	s, err := auth.New(db.NewAuthStore(bdb), auth.Config{
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
	link := must(s.NewSetupLink(ctx))
	creation := must(s.BeginSetup(ctx, sid, origin, link.Token))
	resp := must(a.Create(must(json.Marshal(creation))))
	parsed := must(protocol.ParseCredentialCreationResponseBytes(resp))
	return must(s.FinishRegistration(ctx, sid, parsed, "first"))
}

// stepUp performs a step-up for action on target in session sid.
func stepUp(t *testing.T, s *auth.Service, a *authtest.Authenticator, sid string, action auth.Action, target int64) error {
	t.Helper()
	ctx := context.Background()
	assertion := must(s.BeginStepUp(ctx, sid, origin, action, target))
	resp := must(a.Get(must(json.Marshal(assertion))))
	parsed := must(protocol.ParseCredentialRequestResponseBytes(resp))
	_, _, err := s.FinishStepUp(ctx, sid, parsed)
	return err
}

func TestRedeemIsBoundSpentOnceAndWindowed(t *testing.T) {
	s, clk := newService(t)
	a := authtest.New(origin)
	register(t, s, a, "s1")

	if _, err := s.Redeem("s1", auth.ActionEnableTool, 7); !errors.Is(err, auth.ErrStepUpRequired) {
		t.Fatalf("redeem without step-up: %v", err)
	}
	if err := stepUp(t, s, a, "s1", auth.ActionEnableTool, 7); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		sid    string
		action auth.Action
		target int64
	}{{"s1", auth.ActionEnableTool, 8}, {"s1", auth.ActionRemovePasskey, 7}, {"s2", auth.ActionEnableTool, 7}} {
		if _, err := s.Redeem(c.sid, c.action, c.target); !errors.Is(err, auth.ErrStepUpRequired) {
			t.Errorf("redeemed %s %s %d with a grant for s1 enable 7: %v", c.sid, c.action, c.target, err)
		}
	}
	if !s.HasStepUp("s1", auth.ActionEnableTool, 7) {
		t.Fatal("grant lost by failed redemptions")
	}
	clk.Advance(4*time.Minute + 59*time.Second)
	proof, err := s.Redeem("s1", auth.ActionEnableTool, 7)
	if err != nil || !proof.Permits(auth.ActionEnableTool, 7) || proof.Permits(auth.ActionEnableTool, 8) {
		t.Fatalf("redeem in the window: %v %+v", err, proof)
	}
	if _, err := s.Redeem("s1", auth.ActionEnableTool, 7); !errors.Is(err, auth.ErrStepUpRequired) {
		t.Fatalf("a grant was spent twice: %v", err)
	}

	if err := stepUp(t, s, a, "s1", auth.ActionEnableTool, 7); err != nil {
		t.Fatal(err)
	}
	clk.Advance(5 * time.Minute)
	if _, err := s.Redeem("s1", auth.ActionEnableTool, 7); !errors.Is(err, auth.ErrStepUpRequired) {
		t.Fatalf("redeem at the end of the window: %v", err)
	}
}

func TestEndSessionAndLockForgetGrants(t *testing.T) {
	s, _ := newService(t)
	a := authtest.New(origin)
	register(t, s, a, "s1")
	for _, sid := range []string{"s1", "s2"} {
		if err := stepUp(t, s, a, sid, auth.ActionEnableTool, 1); err != nil {
			t.Fatal(err)
		}
	}
	s.EndSession("s1")
	if s.HasStepUp("s1", auth.ActionEnableTool, 1) || !s.HasStepUp("s2", auth.ActionEnableTool, 1) {
		t.Fatal("EndSession must clear exactly its own session")
	}
	s.ForgetStepUps()
	if s.HasStepUp("s2", auth.ActionEnableTool, 1) {
		t.Fatal("ForgetStepUps kept a grant")
	}
}

func TestFinishWithoutBeginAndReplay(t *testing.T) {
	s, _ := newService(t)
	a := authtest.New(origin)
	register(t, s, a, "s1")
	ctx := context.Background()
	if _, _, err := s.FinishStepUp(ctx, "s1", nil); !errors.Is(err, auth.ErrNoCeremony) {
		t.Fatalf("finish without begin: %v", err)
	}
	assertion := must(s.BeginStepUp(ctx, "s1", origin, auth.ActionEnableTool, 1))
	resp := must(a.Get(must(json.Marshal(assertion))))
	if _, _, err := s.FinishStepUp(ctx, "s1", nil); !errors.Is(err, auth.ErrVerificationFailed) {
		t.Fatalf("unreadable answer: %v", err)
	}
	parsed := must(protocol.ParseCredentialRequestResponseBytes(resp))
	if _, _, err := s.FinishStepUp(ctx, "s1", parsed); !errors.Is(err, auth.ErrNoCeremony) {
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
	if _, err := s.BeginStepUp(ctx, "s1", origin, "format_disk", 1); !errors.Is(err, auth.ErrUnknownAction) {
		t.Fatalf("unknown action: %v", err)
	}
}

func TestSetupLinkRetryInTheSameSession(t *testing.T) {
	s, _ := newService(t)
	ctx := context.Background()
	link := must(s.NewSetupLink(ctx))
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

func TestAddPasskeyNeedsItsOwnProof(t *testing.T) {
	s, _ := newService(t)
	a := authtest.New(origin)
	register(t, s, a, "s1")
	ctx := context.Background()
	if _, err := s.BeginAddPasskey(ctx, "s1", origin, auth.StepUp{}); !errors.Is(err, auth.ErrStepUpRequired) {
		t.Fatalf("add with no proof: %v", err)
	}
	if _, err := s.BeginAddPasskey(ctx, "s1", origin, auth.ForTest(t, auth.ActionEnableTool, 0)); !errors.Is(err, auth.ErrStepUpRequired) {
		t.Fatalf("add with another action's proof: %v", err)
	}
	if err := s.RemovePasskey(ctx, 1, auth.ForTest(t, auth.ActionRemovePasskey, 2)); !errors.Is(err, auth.ErrStepUpRequired) {
		t.Fatalf("remove with another passkey's proof: %v", err)
	}
}

func TestManyPendingCeremoniesStayBounded(t *testing.T) {
	s, clk := newService(t)
	a := authtest.New(origin)
	register(t, s, a, "owner")
	ctx := context.Background()
	// The owner begins a sign-in, then a flood of anonymous sign-ins arrives.
	assertion := must(s.BeginLogin(ctx, "owner", origin))
	clk.Advance(time.Millisecond)
	for i := range 2000 {
		must(s.BeginLogin(ctx, fmt.Sprintf("anon-%d", i), origin))
	}
	resp := must(a.Get(must(json.Marshal(assertion))))
	parsed := must(protocol.ParseCredentialRequestResponseBytes(resp))
	// The oldest ceremony was evicted rather than memory growing without bound.
	if _, err := s.FinishLogin(ctx, "owner", parsed); !errors.Is(err, auth.ErrNoCeremony) {
		t.Fatalf("the flood did not evict the oldest ceremony: %v", err)
	}
}
