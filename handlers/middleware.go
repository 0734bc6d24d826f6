package handlers

import (
	"context"
	"fmt"
	"net/http"
	"strconv"
	"strings"

	"github.com/go-chi/chi/v5"

	"maven/app/auth"
)

// contentSecurityPolicy allows only Maven's own scripts, styles and images: no inline script or
// style, no eval, no framing, no plugins.
const contentSecurityPolicy = "default-src 'self'; script-src 'self'; style-src 'self'; object-src 'none'; base-uri 'none'; frame-ancestors 'none'; form-action 'self'"

// securityHeaders sets the headers every response carries.
func securityHeaders(tls bool) func(http.Handler) http.Handler {
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			h := w.Header()
			h.Set("Content-Security-Policy", contentSecurityPolicy)
			h.Set("X-Content-Type-Options", "nosniff")
			h.Set("Referrer-Policy", "no-referrer")
			h.Set("X-Frame-Options", "DENY")
			h.Set("Cross-Origin-Opener-Policy", "same-origin")
			if tls || isHTTPS(r) {
				h.Set("Strict-Transport-Security", "max-age=31536000")
			}
			next.ServeHTTP(w, r)
		})
	}
}

// noStore keeps pages and API answers out of every cache: they hold the owner's data.
func noStore(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Cache-Control", "no-store")
		next.ServeHTTP(w, r)
	})
}

// carriesKeys marks a route whose request body carries key material (a recovery code, a
// passkey's PRF output): its connection is closed once it is answered. A keep-alive connection
// would keep the request in its read buffer for as long as the browser keeps the connection
// open, lock or no lock. (Over HTTP/2 the header means nothing, and the frames stay with the
// connection.)
func carriesKeys(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Connection", "close")
		next.ServeHTTP(w, r)
	})
}

// crossOrigin refuses unsafe requests (POST, …) that a browser marks as coming from another
// site, or whose Origin does not match Host (net/http.CrossOriginProtection). origins are the
// configured WebAuthn origins, trusted in case a proxy rewrites Host. CrossOriginProtection
// compares an Origin with Host alone, without its scheme, when a browser sends no Fetch
// Metadata: so an Origin naming a scheme and host (anything but "null", which a browser sends
// for its own POSTs under Referrer-Policy no-referrer) must be a configured origin too, which
// refuses http://host when Maven is https://host, and the other way round.
func (s *server) crossOrigin(origins []string) (func(http.Handler) http.Handler, error) {
	cop := http.NewCrossOriginProtection()
	configured := map[string]bool{}
	for _, o := range origins {
		if err := cop.AddTrustedOrigin(o); err != nil {
			return nil, err
		}
		configured[o] = true
	}
	deny := s.handle(func(http.ResponseWriter, *http.Request) error { return errCrossOrigin })
	cop.SetDenyHandler(deny)
	return func(next http.Handler) http.Handler {
		checked := cop.Handler(next)
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			switch r.Method {
			case http.MethodGet, http.MethodHead, http.MethodOptions:
			default:
				if o := r.Header.Get("Origin"); o != "" && o != "null" && !configured[o] {
					deny.ServeHTTP(w, r)
					return
				}
			}
			checked.ServeHTTP(w, r)
		})
	}, nil
}

// sessionLoaded marks the context as carrying a loaded session (LoadAndSave ran), so the error
// page can ask whether the owner is signed in without scs panicking elsewhere.
func sessionLoaded(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		next.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), sessionLoadedKey{}, true)))
	})
}

// requireOwner lets only the signed-in owner through: a session within its idle and absolute
// limits, whose passkey is still registered. Anyone else is sent to /login. A passive route (the
// servers card polling) does not count as activity, so an open tab does not keep a session alive.
func (s *server) requireOwner(passive bool) func(http.Handler) http.Handler {
	return func(next http.Handler) http.Handler {
		return s.handle(func(w http.ResponseWriter, r *http.Request) error {
			ctx := r.Context()
			switch s.sessionState(ctx) {
			case signedOut:
				s.toLogin(w, r)
				return nil
			case signedInExpired:
				return s.expire(w, r)
			}
			pk := s.sessions.GetInt64(ctx, keyPasskey)
			ok, err := s.auth.PasskeyExists(ctx, pk)
			if err != nil {
				return err
			}
			if !ok {
				return s.expire(w, r)
			}
			if !passive {
				s.sessions.Put(ctx, keyLastSeen, s.now().Unix())
			}
			o := owner{sid: s.sessions.GetString(ctx, keySID), passkey: pk}
			next.ServeHTTP(w, r.WithContext(context.WithValue(ctx, ownerKey{}, o)))
			return nil
		})
	}
}

// expire ends a session that outlived its limits (or its passkey) and sends the browser to sign
// in again.
func (s *server) expire(w http.ResponseWriter, r *http.Request) error {
	if err := s.endSession(r.Context()); err != nil {
		return err
	}
	s.toLogin(w, r)
	return nil
}

// toLogin sends the browser to /login in the way the requester understands; to /unlock while
// locked, which signs in too.
func (s *server) toLogin(w http.ResponseWriter, r *http.Request) {
	if s.vault.Locked() {
		s.toUnlock(w, r)
		return
	}
	sendTo(w, r, "/login", http.StatusUnauthorized, "Please sign in.")
}

// requireUnlocked sends every request to /unlock while the daemon is locked
// (docs/design.md#rule-19): nothing behind it runs until the owner unlocks.
func (s *server) requireUnlocked(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if s.vault.Locked() {
			s.toUnlock(w, r)
			return
		}
		next.ServeHTTP(w, r)
	})
}

// toUnlock sends the browser to /unlock (docs/design.md#rule-19).
func (s *server) toUnlock(w http.ResponseWriter, r *http.Request) {
	sendTo(w, r, "/unlock", http.StatusLocked, "Maven is locked. Unlock it first.")
}

// sendTo sends the browser to url in the way the requester understands: status with the
// redirect in HX-Redirect for htmx and in the JSON for maven.js, a 303 otherwise.
func sendTo(w http.ResponseWriter, r *http.Request, url string, status int, msg string) {
	switch {
	case isHTMX(r):
		w.Header().Set(hxRedirect, url)
		w.WriteHeader(status)
	case wantsJSON(r):
		writeJSON(w, status, map[string]string{"error": msg, "redirect": url})
	default:
		http.Redirect(w, r, url, http.StatusSeeOther)
	}
}

// approvalOf reads off a request what a step-up must approve for it.
type approvalOf func(w http.ResponseWriter, r *http.Request) (auth.Approval, error)

// onRoute approves action on the route's {id} (0 when the route has none): for actions on
// something whose shape cannot change under the owner (a passkey, a command line, whose digest
// is its id, a secret).
func onRoute(action auth.Action) approvalOf {
	return func(_ http.ResponseWriter, r *http.Request) (auth.Approval, error) {
		var target int64
		if chi.URLParam(r, "id") != "" {
			id, err := idParam(r)
			if err != nil {
				return auth.Approval{}, err
			}
			target = id
		}
		return auth.One(action, target, ""), nil
	}
}

// asShown approves action on the route's {id} as the owner's page showed it: the form field
// "fingerprint" is the row's data-fingerprint when the page rendered it.
func asShown(action auth.Action) approvalOf {
	return func(w http.ResponseWriter, r *http.Request) (auth.Approval, error) {
		id, err := idParam(r)
		if err != nil {
			return auth.Approval{}, err
		}
		if err := readForm(w, r, maxJSONBody); err != nil {
			return auth.Approval{}, err
		}
		return auth.One(action, id, r.PostForm.Get("fingerprint")), nil
	}
}

// selected is the approval of action on the items the owner selected on a page: each value
// is a target id, followed, when withDigest, by ":" and the fingerprint the page showed of it
// (a row's data-fingerprint). One step-up then names every item (docs/design.md#rule-21).
func selected(action auth.Action, values []string, withDigest bool) (auth.Approval, error) {
	switch {
	case len(values) == 0:
		return auth.Approval{}, errNothingSelected
	case len(values) > auth.MaxItems:
		return auth.Approval{}, errTooManySelected
	}
	a := auth.Approval{Action: action, Items: make([]auth.Item, 0, len(values))}
	for _, v := range values {
		id, digest := v, ""
		if withDigest {
			var ok bool
			if id, digest, ok = strings.Cut(v, ":"); !ok {
				return auth.Approval{}, fmt.Errorf("%w: selected item %q names no fingerprint", errBadRequest, v)
			}
		}
		n, err := strconv.ParseInt(id, 10, 64)
		if err != nil || n <= 0 {
			return auth.Approval{}, fmt.Errorf("%w: selected item %q", errBadRequest, v)
		}
		a.Items = append(a.Items, auth.Item{Target: n, Digest: digest})
	}
	return a, nil
}

// requireStepUp spends the session's step-up grant for exactly the approval approve reads off
// the request and hands the proof to the handler. Without a fresh grant the answer is 403 with
// the HX-Trigger that makes maven.js ask for the passkey (naming the approval), and nothing
// runs.
func (s *server) requireStepUp(approve approvalOf) func(http.Handler) http.Handler {
	return func(next http.Handler) http.Handler {
		return s.handle(func(w http.ResponseWriter, r *http.Request) error {
			approval, err := approve(w, r)
			if err != nil {
				return err
			}
			if err := approval.Validate(); err != nil {
				return fmt.Errorf("%w: %w", errBadRequest, err)
			}
			proof, err := s.auth.Redeem(ownerFrom(r.Context()).sid, approval)
			if err != nil {
				return stepUpNeeded{approval}
			}
			next.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), proofKey{}, proof)))
			return nil
		})
	}
}

// proofFrom returns the step-up proof requireStepUp redeemed; the zero value proves nothing.
func proofFrom(ctx context.Context) auth.StepUp {
	p, _ := ctx.Value(proofKey{}).(auth.StepUp)
	return p
}
