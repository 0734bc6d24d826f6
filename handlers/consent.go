package handlers

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/go-chi/chi/v5"
	"github.com/ory/fosite"

	"maven/app/allowlist"
	"maven/app/auth"
	"maven/app/clients"
	"maven/views"
)

// Errors of the consent.
var (
	// errToolsChanged: a tool ticked is no longer enabled, or none was ticked.
	errToolsChanged = errors.New("the tools changed since the page showed them")
	// errOfferGone: a step-up begun for a consent or a tool set that this daemon did not show.
	errOfferGone = errors.New("no such consent shown")
)

// consentPage is the consent page (GET /oauth/authorize, docs/design.md#rule-29). An
// authorization request Maven refuses goes back to the client with its error (or, when its
// redirect URI is not one Maven may send to, is refused here); while locked the page offers
// the unlock, and to a browser not signed in the sign-in, each coming back to this very
// request. The owner then sees the client, where its answer goes, and the enabled tools, each
// ticked, with Allow and Deny.
func (s *server) consentPage(w http.ResponseWriter, r *http.Request) error {
	ctx := r.Context()
	issuer := s.issuerOf(r)
	ar, err := s.clients.Provider().NewAuthorizeRequest(ctx, r)
	var resource string
	if err == nil {
		resource, err = s.clients.Check(ar, issuer)
	}
	if err != nil {
		return s.authorizeRefused(w, r, ar, issuer, err)
	}
	c, ok := clients.ClientOf(ar.GetClient())
	if !ok {
		return fmt.Errorf("%w: fosite parsed a client that is not Maven's", errBadRequest)
	}
	page := views.ConsentPage{Next: r.URL.RequestURI()}
	if page.Client, err = s.consentClient(ctx, c, ar.GetRedirectURI(), resource); err != nil {
		return err
	}
	page.Page = s.pageInfo(r, "Connect a client", "clients")
	o, signedIn, err := s.currentOwner(r)
	switch {
	case err != nil:
		return err
	case s.vault.Locked():
		page.Need = views.NeedUnlock
	case !signedIn:
		page.Need = views.NeedSignIn
	default:
		req, err := s.clients.Begin(o.sid, ar, resource)
		if err != nil {
			return err
		}
		page.Request = req.ID
		if page.Tools, err = s.enabledTools(ctx); err != nil {
			return err
		}
	}
	s.renderPage(w, r, http.StatusOK, views.PageConsent, page)
	return nil
}

// consentClient is what the consent page says of the client c: what it calls itself, how it
// authenticates, whether the owner approved it before, and where the answer goes.
func (s *server) consentClient(ctx context.Context, c clients.Client, redirect *url.URL, resource string) (views.ConsentClient, error) {
	v := views.ConsentClient{Name: text(c.Name), ID: text(c.ID), How: c.Kind.Words(), Document: c.Kind == clients.KindMetadata,
		RedirectURI: text(redirect.String()), RedirectHost: text(redirect.Host), Resource: resource}
	if redirect.Host == "" {
		v.RedirectHost = text(redirect.Scheme + ":") // a native app's own scheme
	}
	if v.Document {
		// The document says what it says now; the database, whether the owner approved it.
		stored, err := s.clients.Client(ctx, c.ID)
		if err != nil && !errors.Is(err, clients.ErrNotFound) {
			return views.ConsentClient{}, err
		}
		c.ApprovedAt, c.State = stored.ApprovedAt, stored.State
	}
	v.Approved, v.Revoked = !c.ApprovedAt.IsZero(), c.State == clients.StateRevoked
	return v, nil
}

// enabledTools are the rows a client may be given: the enabled ones, by name.
func (s *server) enabledTools(ctx context.Context) ([]views.ConsentTool, error) {
	rows, err := s.tools.List(ctx, allowlist.Filter{States: []allowlist.State{allowlist.StateEnabled}})
	if err != nil {
		return nil, err
	}
	slices.SortFunc(rows, func(a, b allowlist.Tool) int { return strings.Compare(a.Name, b.Name) })
	out := make([]views.ConsentTool, len(rows))
	for i, t := range rows {
		where := "local command"
		if t.IsMCP() {
			where = t.Server()
		}
		out[i] = views.ConsentTool{ID: t.ID, Name: text(t.Name), Where: where, Destructive: t.Destructive}
	}
	return out, nil
}

// currentOwner is the owner signed in at r as requireOwner would let them through (a fresh
// session whose passkey still exists), without sending anyone elsewhere; false for anyone else.
func (s *server) currentOwner(r *http.Request) (owner, bool, error) {
	ctx := r.Context()
	if s.sessionState(ctx) != signedInFresh {
		return owner{}, false, nil
	}
	pk := s.sessions.GetInt64(ctx, keyPasskey)
	if ok, err := s.auth.PasskeyExists(ctx, pk); err != nil || !ok {
		return owner{}, false, err
	}
	s.sessions.Put(ctx, keyLastSeen, s.now().Unix())
	return owner{sid: s.sessions.GetString(ctx, keySID), passkey: pk}, true, nil
}

// authorizeRefused answers an authorization request Maven refuses: with the error at the
// client's redirect URI when Maven may send it there (redirectable), else with a page that says
// why.
func (s *server) authorizeRefused(w http.ResponseWriter, r *http.Request, ar fosite.AuthorizeRequester, issuer string, err error) error {
	e := fosite.ErrorToRFC6749Error(err)
	s.log.Info("authorization request refused", "error", e.ErrorField, "why", e.GetDescription())
	if s.redirectable(r.Context(), ar) {
		return s.answerAuthorize(w, r, issuer, func(rec http.ResponseWriter) {
			s.clients.Provider().WriteAuthorizeError(r.Context(), rec, ar, err)
		})
	}
	s.renderPage(w, r, http.StatusBadRequest, views.PageError, views.ErrorPage{
		Page: s.pageInfo(r, "That did not work", ""), Status: http.StatusBadRequest,
		Message: "This request to connect a client cannot be answered: " + e.GetDescription(),
	})
	return nil
}

// redirectable reports whether an error may go to an authorization request's redirect URI
// unasked: the URI is exactly one its client registered (fosite would take any port of a
// loopback one), and the owner approved that client before. Anyone may register a client with
// any redirect URI, so a refusal sent at once to an unapproved one would make Maven's address
// a redirector to wherever its registration says (RFC 9700 section 4.11).
func (s *server) redirectable(ctx context.Context, ar fosite.AuthorizeRequester) bool {
	if ar == nil || ar.GetClient() == nil || !ar.IsRedirectURIValid() {
		return false
	}
	registered := ar.GetClient().GetRedirectURIs()
	asked := ar.GetRequestForm().Get("redirect_uri")
	if asked == "" && len(registered) != 1 || asked != "" && !slices.Contains(registered, asked) {
		return false
	}
	c, err := s.clients.Client(ctx, ar.GetClient().GetID())
	return err == nil && c.State == clients.StateApproved
}

// answerDecided answers the authorization request the owner decided on, whose form they saw:
// fosite parses it again as it came, then answer says what its redirect URI gets (written by
// the func it returns). A request fosite or answer refuses gets authorizeRefused's answer.
func (s *server) answerDecided(w http.ResponseWriter, r *http.Request, form url.Values,
	answer func(ar fosite.AuthorizeRequester) (func(http.ResponseWriter), error)) error {
	ctx := r.Context()
	issuer := s.issuerOf(r)
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, pathAuthorize+"?"+form.Encode(), nil)
	if err != nil {
		return err
	}
	ar, err := s.clients.Provider().NewAuthorizeRequest(ctx, req)
	if err != nil {
		return s.authorizeRefused(w, r, ar, issuer, err)
	}
	write, err := answer(ar)
	if err != nil {
		return s.authorizeRefused(w, r, ar, issuer, err)
	}
	return s.answerAuthorize(w, r, issuer, write)
}

// consentAllowPost is Allow (POST /oauth/authorize/{id}): the step-up approved exactly this
// request, client, redirect URI and tool set (requireStepUp, consentAsShown), so the client is
// approved with those tools and its redirect URI gets the code, bound to its resource.
func (s *server) consentAllowPost(w http.ResponseWriter, r *http.Request) error {
	ctx := r.Context()
	choice, err := s.choiceOf(ctx, r.PostForm)
	if err != nil {
		return err
	}
	done, err := s.clients.Consent(ctx, ownerFrom(ctx).sid, chi.URLParam(r, "id"), choice, proofFrom(ctx))
	if err != nil {
		return err
	}
	return s.answerDecided(w, r, done.Form, func(ar fosite.AuthorizeRequester) (func(http.ResponseWriter), error) {
		resp, err := s.clients.Respond(ctx, ar, done)
		if err != nil {
			return nil, err
		}
		s.log.Info("client allowed", "client", done.Client.ID, "redirect", done.RedirectURI, "by", proofFrom(ctx).Owner())
		return func(rec http.ResponseWriter) { s.clients.Provider().WriteAuthorizeResponse(ctx, rec, ar, resp) }, nil
	})
}

// consentDenyPost is Deny (POST /oauth/authorize/{id}/deny): the client's redirect URI gets
// access_denied. It needs no step-up: it grants nothing.
func (s *server) consentDenyPost(w http.ResponseWriter, r *http.Request) error {
	ctx := r.Context()
	done, err := s.clients.Deny(ctx, ownerFrom(ctx).sid, chi.URLParam(r, "id"))
	if err != nil {
		return err
	}
	return s.answerDecided(w, r, done.Form, func(ar fosite.AuthorizeRequester) (func(http.ResponseWriter), error) {
		return func(rec http.ResponseWriter) {
			s.clients.Provider().WriteAuthorizeError(ctx, rec, ar, fosite.ErrAccessDenied.WithHint("The owner denied the request."))
		}, nil
	})
}

// choiceOf reads a tool choice from a form: "tools" is "all" (every enabled tool, now and
// later) or "ticked", and then every "tool" is the id of an enabled row, at least one.
func (s *server) choiceOf(ctx context.Context, form url.Values) (clients.Choice, error) {
	switch form.Get("tools") {
	case "all":
		return clients.Choice{All: true}, nil
	case "ticked":
	default:
		return clients.Choice{}, fmt.Errorf("%w: tools is %q", errBadRequest, form.Get("tools"))
	}
	ids := make([]int64, 0, len(form["tool"]))
	for _, v := range form["tool"] {
		id, err := strconv.ParseInt(v, 10, 64)
		if err != nil || id <= 0 {
			return clients.Choice{}, fmt.Errorf("%w: tool %q", errBadRequest, v)
		}
		ids = append(ids, id)
	}
	if len(ids) == 0 {
		return clients.Choice{}, errNothingSelected
	}
	rows, err := s.tools.List(ctx, allowlist.Filter{IDs: ids, States: []allowlist.State{allowlist.StateEnabled}})
	if err != nil {
		return clients.Choice{}, err
	}
	slices.Sort(ids)
	if len(rows) != len(slices.Compact(ids)) {
		return clients.Choice{}, errToolsChanged
	}
	c := clients.Choice{ToolIDs: ids}
	for _, t := range rows {
		c.Names = append(c.Names, t.Name)
	}
	return c, nil
}

// consentAsShown approves Allow as the consent page showed it: the request of this session
// named by the route, and the tools ticked (ConsentDigest). What the prompt will say of it is
// kept with its digest.
func (s *server) consentAsShown(w http.ResponseWriter, r *http.Request) (auth.Approval, error) {
	if err := readForm(w, r, maxJSONBody); err != nil {
		return auth.Approval{}, err
	}
	ctx := r.Context()
	req, err := s.clients.Request(ownerFrom(ctx).sid, chi.URLParam(r, "id"))
	if err != nil {
		return auth.Approval{}, err
	}
	choice, err := s.choiceOf(ctx, r.PostForm)
	if err != nil {
		return auth.Approval{}, err
	}
	digest := clients.ConsentDigest(req, choice)
	s.offers.put(digest, fmt.Sprintf("let “%s” (client id %s) connect, its answer going to %s, and see %s",
		req.Client.Name, req.Client.ID, req.RedirectURI, choiceWords(choice)))
	return auth.One(auth.ActionConsentClient, 0, digest), nil
}

// choiceWords says a tool choice for a step-up's prompt.
func choiceWords(c clients.Choice) string {
	if c.All {
		return "every tool you enable, now and later"
	}
	if len(c.Names) == 1 {
		return "one tool: " + c.Names[0]
	}
	return fmt.Sprintf("these %d tools: %s", len(c.Names), strings.Join(c.Names, ", "))
}

// offers are what the prompts of the step-ups the owner was last asked for, for a consent or a
// client's tools, say: a step-up names only a digest, and the prompt names what it covers. Only
// the signed-in owner's requests add to it, and it holds a few.
type offers struct {
	mu   sync.Mutex
	list []offer
}

type offer struct{ digest, words string }

const maxOffers = 32

func (o *offers) put(digest, words string) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.list = slices.DeleteFunc(o.list, func(x offer) bool { return x.digest == digest })
	o.list = append(o.list, offer{digest, words})
	if len(o.list) > maxOffers {
		o.list = o.list[1:]
	}
}

// words is what the step-up of digest approves, in words; errOfferGone if none was asked for.
func (o *offers) words(digest string) (string, error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	for _, x := range o.list {
		if x.digest == digest {
			return x.words, nil
		}
	}
	return "", errOfferGone
}
