package handlers

import (
	"context"
	"encoding/base64"
	"errors"
	"net/http"
	"slices"
	"strconv"

	"github.com/go-webauthn/webauthn/protocol"

	"maven/app/auth"
	"maven/app/vault"
	"maven/views"
)

// maxRecoveryForm bounds the recovery code form; a code is 34 characters.
const maxRecoveryForm = 4 << 10

// Messages of the unlock page. One message covers every way a passkey unlock can fail once
// the ceremony ran (a bad signature, a wrong or forged PRF output, a tampered slot), so the
// answer never says which check failed (docs/security.md#req-28).
const (
	msgUnlockFailed   = "That did not unlock Maven. Try again, or use your recovery code."
	msgRecoveryFailed = "That recovery code did not unlock Maven."
	msgNoPRF          = "This passkey can sign you in, but it cannot unlock Maven: it does not support the PRF extension, or was never set up to unlock. Use your recovery code."
)

// unlockFailure is a passkey unlock that failed after the ceremony ran. It deliberately does
// not unwrap, so classify cannot tell a failed signature from a wrap that did not open; the
// cause is in its text, for the log only.
type unlockFailure struct{ cause error }

func (e unlockFailure) Error() string { return "unlock failed: " + e.cause.Error() }

// errNotLocked answers an unlock of a daemon that is not locked.
var errNotLocked = errors.New("not locked")

// unlockPage is GET /unlock: built for a phone, it unlocks with one passkey gesture (which also
// signs the owner in) or with the recovery code.
func (s *server) unlockPage(w http.ResponseWriter, r *http.Request) error {
	s.renderUnlock(w, r, http.StatusOK, "")
	return nil
}

func (s *server) renderUnlock(w http.ResponseWriter, r *http.Request, status int, msg string) {
	s.renderPage(w, r, status, views.PageUnlock, views.UnlockPage{
		Page: s.pageInfo(r, "Unlock", ""), Reach: s.reach(r), HasVault: s.vault.HasVault(), Locked: s.vault.Locked(),
		Error: msg, RecoveryOpen: msg != "", ExplainPRF: s.somePasskeyLacksPRF(r),
	})
}

// somePasskeyLacksPRF reports whether a registered passkey cannot do PRF, or none is registered:
// only then does the unlock page say which passkeys can unlock. When the passkeys cannot be read,
// it says so too, to be safe.
func (s *server) somePasskeyLacksPRF(r *http.Request) bool {
	ps, err := s.auth.Passkeys(r.Context())
	if err != nil {
		s.log.Error("unlock page: read the passkeys", "err", err)
		return true
	}
	return len(ps) == 0 || slices.ContainsFunc(ps, func(p auth.Passkey) bool { return !p.CanUnlock() })
}

// unlockBeginPost begins the unlock assertion: every passkey of the owner may answer, and each
// one the vault has a slot for is asked to evaluate its PRF over that slot's input.
func (s *server) unlockBeginPost(w http.ResponseWriter, r *http.Request) error {
	if err := readEmpty(w, r); err != nil {
		return err
	}
	ctx := r.Context()
	if !s.vault.Locked() {
		return errNotLocked
	}
	inputs, err := s.vault.PRFInputs(ctx)
	if err != nil {
		return err
	}
	opts, err := s.auth.BeginUnlock(ctx, s.ceremonyID(w, r), origin(r), inputs)
	return sendOptions(w, opts, err)
}

// unlockFinishPost verifies the assertion, then hands its PRF output to the vault: the daemon
// unlocks only if both succeed, and the owner is then signed in under a new session token. A
// passkey the vault has no slot for signs the owner in and is told, plainly, that it cannot
// unlock. Nothing here dials: the vault's unlock hook only arms the timer that wakes the MCP
// supervisors.
func (s *server) unlockFinishPost(w http.ResponseWriter, r *http.Request) error {
	ctx := r.Context()
	var claimed *protocol.ParsedCredentialAssertionData // for the log when verification fails
	pa, err := finishAssertion(w, r, ceremonyIDOf(r), func(ctx context.Context, sid string, resp *protocol.ParsedCredentialAssertionData) (auth.PRFAssertion, error) {
		claimed = resp
		return s.auth.FinishUnlock(ctx, sid, resp)
	})
	defer clear(pa.Output)
	credential := credentialOf(claimed, pa)
	if err != nil {
		s.logUnlock(r, "passkey", unlockOutcome(err), credential)
		if isAssertionFailure(err) {
			err = unlockFailure{err}
		}
		return err
	}
	if !s.vault.Locked() {
		// Unlocked meanwhile (another tab, the recovery code): the assertion still signs in.
		return s.unlockedSignIn(w, r, pa.Passkey.ID, "already unlocked", credential)
	}
	if pa.Input == nil {
		s.logUnlock(r, "passkey", "no_slot", credential)
		if err := s.signIn(w, r, pa.Passkey.ID); err != nil {
			return err
		}
		writeJSON(w, http.StatusOK, map[string]any{"ok": false, "signed_in": true, "no_prf": true, "error": msgNoPRF})
		return nil
	}
	if err := s.vault.UnlockWithPRF(ctx, pa.Passkey.CredentialID, pa.Output); err != nil {
		s.logUnlock(r, "passkey", unlockOutcome(err), credential)
		if errors.Is(err, vault.ErrUnlockFailed) {
			err = unlockFailure{err}
		}
		return err
	}
	return s.unlockedSignIn(w, r, pa.Passkey.ID, "unlocked", credential)
}

// unlockedSignIn signs the owner in after a passkey unlock and says where to go next.
func (s *server) unlockedSignIn(w http.ResponseWriter, r *http.Request, passkey int64, outcome, credential string) error {
	ctx := r.Context()
	s.logUnlock(r, "passkey", outcome, credential)
	if err := s.signIn(w, r, passkey); err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, map[string]any{"ok": true, "redirect": s.afterUnlock(ctx, true)})
	return nil
}

// unlockRecoveryPost unlocks with the recovery code (form field "code"). The code does not
// sign anyone in: a signed-in session goes on to make a new code, others go to sign in.
func (s *server) unlockRecoveryPost(w http.ResponseWriter, r *http.Request) error {
	ctx := r.Context()
	if !s.vault.Locked() {
		redirect(w, r, "/")
		return nil
	}
	if err := readForm(w, r, maxRecoveryForm); err != nil {
		return err
	}
	// Each source (or browser the owner signed in with before) has its own budget of attempts,
	// and all of them share one that bounds the Argon2id work: a stranger guessing codes slows
	// down only themselves, and can never push the owner into a back-off.
	err := s.takeAnonymous(r, s.recoveryByBrowser, s.recoveryBySource)
	if err == nil {
		err = take(s.recoveryTotal, s.now())
	}
	if err == nil {
		err = s.vault.UnlockWithRecovery(ctx, r.PostForm.Get("code"))
	}
	s.logUnlock(r, "recovery code", unlockOutcome(err), "")
	// Recovery codes are limited here, per source and in all (the vault's back-off is for
	// passkeys), so that strangers cannot lock the owner out.
	var limited rateLimited
	switch {
	case err == nil:
		redirect(w, r, s.afterUnlock(ctx, s.signedIn(r)))
	case errors.As(err, &limited):
		wait, _ := retryAfter(err)
		w.Header().Set("Retry-After", strconv.Itoa(seconds(wait)))
		s.renderUnlock(w, r, http.StatusTooManyRequests, classify(err).msg)
	case errors.Is(err, vault.ErrMalformedCode):
		s.renderUnlock(w, r, http.StatusUnprocessableEntity, "That is not a well-formed recovery code: check it for a typo.")
	case errors.Is(err, vault.ErrUnlockFailed):
		s.renderUnlock(w, r, http.StatusBadRequest, msgRecoveryFailed)
	default:
		return err
	}
	return nil
}

// afterUnlock is where the browser goes once unlocked: to replace a used recovery code first
// (docs/security.md#req-33), to the tools otherwise; to sign in when the session is not the owner's
// (the page then says that the recovery code unlocked but signed no one in).
func (s *server) afterUnlock(ctx context.Context, signedIn bool) string {
	if !signedIn {
		return "/login?why=" + whyRecovered
	}
	if used, err := s.vault.RecoveryUsed(ctx); err == nil && used {
		return "/secrets#recovery"
	}
	return "/tools"
}

// lockPost locks the daemon (the Lock button): the data key is forgotten, MCP sessions that
// use secrets end, pending voice confirms and step-ups are dropped, and every browser session
// is signed out.
func (s *server) lockPost(w http.ResponseWriter, r *http.Request) error {
	s.vault.Lock()
	s.log.Info("locked from the web", "passkey", ownerFrom(r.Context()).passkey, "source", r.RemoteAddr)
	if err := s.endSession(r.Context()); err != nil {
		return err
	}
	redirect(w, r, "/unlock")
	return nil
}

// logUnlock records an unlock attempt: how, the outcome, which credential and from where.
// Never the PRF output or the code.
func (s *server) logUnlock(r *http.Request, method, outcome, credential string) {
	s.log.Info("unlock attempt", "method", method, "outcome", outcome, "credential", credential, "source", r.RemoteAddr)
}

// unlockOutcome names an attempt's outcome for the log.
func unlockOutcome(err error) string {
	switch {
	case err == nil:
		return "unlocked"
	case errors.Is(err, vault.ErrTooManyAttempts), errors.As(err, new(rateLimited)):
		return "rate_limited"
	case errors.Is(err, vault.ErrMalformedCode):
		return "malformed"
	case errors.Is(err, vault.ErrUnlockFailed), isAssertionFailure(err):
		return "failed"
	}
	return "error"
}

// isAssertionFailure reports whether err says the assertion itself did not verify, as opposed
// to a ceremony that was never begun, expired, or a failure on Maven's side.
func isAssertionFailure(err error) bool {
	return errors.Is(err, auth.ErrVerificationFailed) || errors.Is(err, auth.ErrUserNotVerified) ||
		errors.Is(err, auth.ErrCloneWarning) || errors.Is(err, auth.ErrBackupEligibilityChanged)
}

// credentialOf names the credential of an attempt for the log: the verified passkey's, else
// the one the client claimed.
func credentialOf(resp *protocol.ParsedCredentialAssertionData, pa auth.PRFAssertion) string {
	switch {
	case pa.Passkey.CredentialID != nil:
		return base64.RawURLEncoding.EncodeToString(pa.Passkey.CredentialID)
	case resp != nil:
		return base64.RawURLEncoding.EncodeToString(resp.RawID)
	}
	return ""
}
