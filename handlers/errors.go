package handlers

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strconv"
	"time"

	"maven/app/allowlist"
	"maven/app/approval"
	"maven/app/auth"
	"maven/app/mcp"
	"maven/app/oauth"
	"maven/app/phrases"
	"maven/app/vault"
	"maven/views"
)

// Errors of the handlers themselves.
var (
	errBadRequest    = errors.New("malformed request")
	errBadCredential = errors.New("unreadable passkey response")
	errCrossOrigin   = errors.New("cross-origin request refused")
	errNoPage        = errors.New("no such page")
	errMethod        = errors.New("method not allowed")
	// A batch approval with nothing, or more than auth.MaxItems, selected.
	errNothingSelected = errors.New("nothing selected")
	errTooManySelected = errors.New("too many selected")
)

// apiError is a failure of an endpoint that machines call (the voice webhook): its status and
// message go out as they are, always as JSON.
type apiError struct {
	status int
	msg    string
}

func (e apiError) Error() string { return fmt.Sprintf("%d: %s", e.status, e.msg) }

// stepUpNeeded is the error of an action that needs a fresh step-up approving exactly approval.
type stepUpNeeded struct{ approval auth.Approval }

func (e stepUpNeeded) Error() string {
	return fmt.Sprintf("step-up required for %s %v", e.approval.Action, e.approval.Items)
}

// Is makes a stepUpNeeded match auth.ErrStepUpRequired.
func (e stepUpNeeded) Is(target error) bool { return target == auth.ErrStepUpRequired }

// problem is how one error is answered: a status, a message fit for the owner, and how loudly to
// log the error behind it.
type problem struct {
	status int
	msg    string
	level  slog.Level
}

// classify maps every error the handlers can meet to a problem, in one place. The message never
// includes err.Error(): errors carry names and details that are for the log only. It stays one
// switch (docs/style.md#sizes): the order of its cases decides which message an error that wraps
// two gets.
func classify(err error) problem {
	info, warn := slog.LevelInfo, slog.LevelWarn
	var uf unlockFailure
	var tooMany *vault.TooManyAttemptsError
	var api apiError
	var limited rateLimited
	switch {
	case errors.As(err, &api):
		return problem{api.status, api.msg, info}
	// First: an unlock failure must look the same whatever check failed inside it.
	case errors.As(err, &uf), errors.Is(err, vault.ErrUnlockFailed):
		return problem{http.StatusBadRequest, msgUnlockFailed, warn}
	case errors.As(err, &tooMany):
		return problem{http.StatusTooManyRequests, fmt.Sprintf("Too many failed attempts. Try again in %d seconds.", seconds(tooMany.RetryAfter)), warn}
	case errors.As(err, &limited):
		return problem{http.StatusTooManyRequests, fmt.Sprintf("Too many attempts. Try again in %d seconds.", seconds(limited.wait)), warn}
	case errors.Is(err, auth.ErrBusy):
		return problem{http.StatusServiceUnavailable, "Maven is busy with other sign-ins. Try again in a minute.", warn}
	case errors.Is(err, vault.ErrLocked):
		return problem{http.StatusLocked, "Maven is locked. Unlock it first.", info}
	case errors.Is(err, vault.ErrNoVault):
		return problem{http.StatusConflict, "There is no vault yet. Register a passkey that supports PRF to create one.", info}
	case errors.Is(err, vault.ErrInvalid):
		return problem{http.StatusUnprocessableEntity, fmt.Sprintf("A secret's name is 1 to 64 of A–Z a–z 0–9 _ . - and its value at most %d KiB.", vault.MaxSecretSize>>10), info}
	case errors.Is(err, vault.ErrNotFound):
		return problem{http.StatusNotFound, "That secret does not exist.", info}
	case errors.Is(err, errNotLocked):
		return problem{http.StatusConflict, "Maven is already unlocked.", info}
	case errors.Is(err, errNoPRFOutput):
		return problem{http.StatusUnprocessableEntity, "This passkey gave no PRF result, so it cannot unlock Maven. It can still sign in.", warn}
	case errors.Is(err, auth.ErrStepUpRequired):
		return problem{http.StatusForbidden, "This needs a fresh confirmation with your passkey.", info}
	case errors.As(err, new(wrongHost)):
		return problem{http.StatusMisdirectedRequest, "This page was opened at an address Maven is not configured for (see “origins” in its config).", warn}
	case errors.Is(err, errCrossOrigin):
		return problem{http.StatusForbidden, "This request came from another site and was refused.", warn}
	case errors.Is(err, allowlist.ErrShapeChanged):
		return problem{http.StatusConflict, "This tool changed since the page showed it, so nothing was enabled. Reload the page to see what it declares now.", info}
	case errors.Is(err, allowlist.ErrNotFound):
		return problem{http.StatusNotFound, "That tool does not exist.", info}
	case errors.As(err, new(*phrases.Error)):
		return problem{http.StatusUnprocessableEntity, "Some of the phrases cannot be used, so none were saved. The tools page names each line.", info}
	case errors.Is(err, phrases.ErrTooMany):
		return problem{http.StatusUnprocessableEntity, fmt.Sprintf("A tool takes at most %d phrases; none were saved.", phrases.MaxLines), info}
	case errors.Is(err, phrases.ErrNotPhrasable):
		return problem{http.StatusConflict, "Only an enabled MCP tool takes phrases; none were saved.", info}
	case errors.Is(err, approval.ErrNotFound):
		return problem{http.StatusNotFound, "That command line does not exist.", info}
	case errors.Is(err, auth.ErrPasskeyNotFound):
		return problem{http.StatusNotFound, "That passkey does not exist.", info}
	case errors.Is(err, errNothingSelected):
		return problem{http.StatusUnprocessableEntity, "Nothing is selected. Tick the boxes of what you want to approve first.", info}
	case errors.Is(err, errTooManySelected):
		return problem{http.StatusUnprocessableEntity, fmt.Sprintf("At most %d can be approved at once.", auth.MaxItems), info}
	case errors.Is(err, mcp.ErrSignInChanged), errors.Is(err, oauth.ErrChanged):
		return problem{http.StatusConflict, "What this server asks you to sign in for changed since the page showed it. Check the servers card again.", info}
	case errors.Is(err, mcp.ErrUnknownServer):
		return problem{http.StatusNotFound, "There is no MCP server of that name in Maven's config.", info}
	case errors.Is(err, mcp.ErrNoSignInNeeded):
		return problem{http.StatusConflict, "This server does not wait for a sign-in now.", info}
	case errors.Is(err, errNoVaultToSeal):
		return problem{http.StatusConflict, "Maven keeps a sign-in sealed in its vault, and there is none yet: register a passkey that can unlock Maven first.", info}
	case errors.Is(err, oauth.ErrNoSignIn):
		return problem{http.StatusBadRequest, "This sign-in answer is not one Maven waits for from this browser: it was used already, expired, or began elsewhere. Sign in again from the servers card.", info}
	case errors.Is(err, oauth.ErrTooManySignIns):
		return problem{http.StatusServiceUnavailable, "Too many sign-ins are in progress. Finish one, or try again in a few minutes.", warn}
	case errors.Is(err, errNoPage):
		return problem{http.StatusNotFound, "There is no such page.", info}
	case errors.Is(err, errMethod):
		return problem{http.StatusMethodNotAllowed, "That method is not allowed here.", info}
	case errors.Is(err, allowlist.ErrIllegalTransition):
		return problem{http.StatusConflict, "That change is not possible in the tool's current state. Reload the page to see where it stands.", info}
	case errors.Is(err, allowlist.ErrInvalid):
		return problem{http.StatusUnprocessableEntity, "That tool is not valid.", info}
	}
	for _, area := range []func(error) (problem, bool){passkeyProblem, clientProblem, notifyProblem, limitsProblem, pendingProblem} {
		if p, ok := area(err); ok {
			return p
		}
	}
	switch {
	case errors.Is(err, errBadRequest):
		return problem{http.StatusBadRequest, "The request could not be read.", info}
	case errors.Is(err, context.Canceled):
		return problem{499, "The request was cancelled.", info}
	}
	return problem{http.StatusInternalServerError, "Something went wrong on Maven's side. The details are in its log.", slog.LevelError}
}

// passkeyProblem maps the errors of the passkey ceremonies and the passkeys (auth's).
func passkeyProblem(err error) (problem, bool) {
	info, warn := slog.LevelInfo, slog.LevelWarn
	switch {
	case errors.Is(err, auth.ErrLastPasskey):
		return problem{http.StatusConflict, "Your only passkey cannot be removed. Add another one first.", info}, true
	case errors.Is(err, auth.ErrInvalidName):
		return problem{http.StatusUnprocessableEntity, fmt.Sprintf("A passkey name is 1 to %d visible characters.", auth.MaxPasskeyNameLen), info}, true
	case errors.Is(err, auth.ErrDuplicatePasskey):
		return problem{http.StatusConflict, "This passkey is already registered.", info}, true
	case errors.Is(err, auth.ErrSetupLinkInvalid):
		return problem{http.StatusBadRequest, "This setup link is unknown, already used, expired or replaced by a newer one. Run “maven setup-link” for a new one.", warn}, true
	case errors.Is(err, auth.ErrNoCeremony):
		return problem{http.StatusBadRequest, "This passkey request was already used or has expired. Please start again.", warn}, true
	case errors.Is(err, auth.ErrCeremonyExpired):
		return problem{http.StatusBadRequest, "This passkey request expired. Please start again.", info}, true
	case errors.Is(err, auth.ErrUserNotVerified):
		return problem{http.StatusBadRequest, "Your authenticator did not verify you with a PIN, fingerprint or face, which Maven requires. Nothing was changed.", warn}, true
	case errors.Is(err, auth.ErrCloneWarning):
		return problem{http.StatusBadRequest, "This passkey's signature counter went backwards, so it may have been copied. It was refused: use another passkey, or remove this one and register it again.", warn}, true
	case errors.Is(err, auth.ErrBackupEligibilityChanged):
		return problem{http.StatusBadRequest, "This passkey changed how it is backed up, which should never happen. It was refused: remove it and register it again.", warn}, true
	case errors.Is(err, auth.ErrVerificationFailed):
		return problem{http.StatusBadRequest, "The passkey could not be verified. Nothing was changed.", warn}, true
	case errors.Is(err, auth.ErrNoOwner):
		return problem{http.StatusBadRequest, "No passkey is registered yet. Open a setup link first.", info}, true
	case errors.Is(err, auth.ErrUnknownAction):
		return problem{http.StatusBadRequest, "Maven cannot approve that: reload the page and try again.", info}, true
	case errors.Is(err, auth.ErrBadOrigin):
		return problem{http.StatusBadRequest, "This page was opened at an address Maven is not configured for (see “origins” in its config).", warn}, true
	case errors.Is(err, errBadCredential):
		return problem{http.StatusBadRequest, "The passkey response could not be read. Nothing was changed.", warn}, true
	}
	return problem{}, false
}

// handlerFunc is a handler that returns its failure instead of answering it. handle answers
// every returned error in one place (fail), so no handler can forget to stop after one.
type handlerFunc func(w http.ResponseWriter, r *http.Request) error

// handle adapts h to net/http: an error h returns is answered by fail.
func (s *server) handle(h handlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if err := h(w, r); err != nil {
			s.fail(w, r, err)
		}
	}
}

// fail answers r with the problem err maps to, in the form the requester reads: JSON for the
// WebAuthn endpoints, a message in the page's status area for htmx, a page otherwise. It logs
// err once, here; a step-up asked for is no failure, and is logged at debug.
func (s *server) fail(w http.ResponseWriter, r *http.Request, err error) {
	p := classify(err)
	var need stepUpNeeded
	if errors.As(err, &need) {
		// The first half of every step-up: expected, not a failure.
		s.log.Debug("step-up asked", "method", r.Method, "path", r.URL.Path, "action", need.approval.Action)
	} else {
		s.log.Log(r.Context(), p.level, "request failed", "method", r.Method, "path", r.URL.Path, "status", p.status, "err", err)
	}
	if wait, ok := retryAfter(err); ok {
		w.Header().Set("Retry-After", strconv.Itoa(seconds(wait)))
	}

	if errors.As(err, &need) {
		// maven.js does the step-up and asks again; htmx swaps nothing meanwhile.
		triggerStepUp(w, need)
		if wantsJSON(r) || isHTMX(r) {
			w.Header().Set(hxReswap, "none")
			writeJSON(w, p.status, map[string]any{"error": p.msg, "step_up": need.approval})
			return
		}
	}
	switch {
	case wantsJSON(r) || errors.As(err, new(apiError)):
		writeJSON(w, p.status, map[string]string{"error": p.msg})
	case isHTMX(r):
		w.Header().Set(hxRetarget, "#flash")
		w.Header().Set(hxReswap, "innerHTML")
		s.renderPartial(w, r, p.status, views.PartialFlash, views.Flash{Kind: "error", Message: p.msg})
	default:
		title := "Something went wrong"
		if p.status < 500 {
			title = "That did not work"
		}
		s.renderPage(w, r, p.status, views.PageError, views.ErrorPage{
			Page: s.pageInfo(r, title, ""), Status: p.status, Message: p.msg,
		})
	}
}

// retryAfter says when a refused request may be tried again, if the refusal says.
func retryAfter(err error) (time.Duration, bool) {
	var tooMany *vault.TooManyAttemptsError
	var limited rateLimited
	switch {
	case errors.As(err, &tooMany):
		return tooMany.RetryAfter, true
	case errors.As(err, &limited):
		return limited.wait, true
	case errors.Is(err, auth.ErrBusy):
		return auth.DefaultCeremonyTimeout, true
	}
	return 0, false
}

// seconds is d in whole seconds, rounded up, at least 1.
func seconds(d time.Duration) int {
	return max(int((d+time.Second-1)/time.Second), 1)
}

// sessionError is the scs ErrorFunc: a session store failure is answered like any other error.
func (s *server) sessionError(w http.ResponseWriter, r *http.Request, err error) {
	s.log.Error("session store failed", "path", r.URL.Path, "err", err)
	http.Error(w, "Something went wrong on Maven's side.", http.StatusInternalServerError)
}
