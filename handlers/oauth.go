package handlers

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"

	"maven/app/auth"
	"maven/app/mcp"
	"maven/app/oauth"
)

// ServerSignIn begins the owner's sign-in to an MCP server that waits for one (*mcp.Manager).
type ServerSignIn interface {
	// SignIn returns the authorization URL to send the browser to; mcp.ErrSignInChanged when
	// the server no longer asks for what digest names, mcp.ErrNoSignInNeeded when it asks for
	// nothing.
	SignIn(ctx context.Context, server, digest, session, origin string) (string, error)
}

// OAuthClient finishes sign-ins on Maven's callback and describes Maven as an OAuth client
// (*oauth.Service).
type OAuthClient interface {
	// Complete fails with oauth.ErrNoSignIn for a callback no sign-in of this session waits for.
	Complete(ctx context.Context, session string, at *url.URL) (string, error)
	// MetadataDocument is Maven's client ID metadata document; nil without an https origin.
	MetadataDocument() map[string]any
}

// Errors of signing in.
var errNoVaultToSeal = errors.New("no vault to seal a sign-in in")

// signInAsShown approves signing in to the server the form names (fields "server" and
// "fingerprint"): the fingerprint is the card's data-fingerprint, which names the server, its
// authorization server and the scopes it showed (oauth.Digest).
func signInAsShown(w http.ResponseWriter, r *http.Request) (auth.Approval, error) {
	if err := readForm(w, r, maxJSONBody); err != nil {
		return auth.Approval{}, err
	}
	return auth.One(auth.ActionSignIn, 0, r.PostForm.Get("fingerprint")), nil
}

// serverSignInPost begins the sign-in the step-up approved (requireStepUp has spent the grant
// for exactly what the card showed) and sends the browser to the authorization server. Tokens
// are sealed, so it needs a vault; a server whose need changed since is refused.
func (s *server) serverSignInPost(w http.ResponseWriter, r *http.Request) error {
	approval := proofFrom(r.Context()).Approval()
	if approval.Action != auth.ActionSignIn || len(approval.Items) != 1 {
		return auth.ErrStepUpRequired
	}
	if !s.vault.HasVault() {
		return errNoVaultToSeal
	}
	server := r.PostForm.Get("server")
	u, err := s.signIns.SignIn(r.Context(), server, approval.Items[0].Digest, ownerFrom(r.Context()).sid, s.browserOrigin(r))
	if err != nil {
		return err
	}
	s.log.Info("oauth sign-in begun", "server", server, "by", proofFrom(r.Context()).Owner())
	redirect(w, r, u)
	return nil
}

// browserOrigin is the configured origin the browser is on: its Origin header, or for a request
// without one (a client that is not a browser) the origin of its Host, which originHost has
// checked is configured.
func (s *server) browserOrigin(r *http.Request) string {
	if o := origin(r); o != "" {
		return o
	}
	for _, o := range s.origins {
		if u, err := url.Parse(o); err == nil && strings.EqualFold(u.Host, r.Host) {
			return o
		}
	}
	return ""
}

// oauthCallbackGet is where the authorization server sends the owner's browser back: the
// sign-in of this session that the state names finishes (the code exchanged, the tokens
// sealed), and the browser goes back to the servers card, which shows how it went. A failed
// sign-in is the card's to show and oauth's to log and record, once.
func (s *server) oauthCallbackGet(w http.ResponseWriter, r *http.Request) error {
	if _, err := s.oauth.Complete(r.Context(), ownerFrom(r.Context()).sid, r.URL); errors.Is(err, oauth.ErrNoSignIn) {
		return err
	}
	http.Redirect(w, r, "/tools#mcp-servers", http.StatusSeeOther)
	return nil
}

// clientMetadataGet serves Maven's client ID metadata document, which authorization servers
// fetch to learn who the client_id URL is; nothing in it is secret.
func (s *server) clientMetadataGet(w http.ResponseWriter, _ *http.Request) error {
	doc := s.oauth.MetadataDocument()
	if doc == nil {
		return errNoPage
	}
	w.Header().Set("Cache-Control", "max-age=3600")
	writeJSON(w, http.StatusOK, doc)
	return nil
}

// signInTarget names the server a sign-in's step-up approves, with what it asks for, as the
// card shows it now; mcp.ErrSignInChanged when no server waiting for a sign-in shows digest.
func (s *server) signInTarget(digest string) (string, error) {
	for _, st := range s.servers.Status() {
		if st.State == mcp.StateNeedsAuth && st.SignInDigest() == digest {
			return fmt.Sprintf("the MCP server “%s”, at the authorization server %s (%s), asking for %s%s",
				st.Name, hostOf(st.AuthServer), st.AuthServer, scopesText(st.AuthScopes), signInElsewhere(st)), nil
		}
	}
	return "", mcp.ErrSignInChanged
}

// hostOf is the host (and port) of the URL u, which names an authorization server to the owner
// better than its whole URL; u itself if it has none.
func hostOf(u string) string {
	if p, err := url.Parse(u); err == nil && p.Host != "" {
		return p.Host
	}
	return u
}

// signInPage is the host of the page the browser signs in at, when the authorization server's
// metadata puts it on another host than the authorization server's own, "" otherwise. Said to
// the owner, since it is also how a hostile authorization server sends the browser to an honest
// one's page to have its answer sent to itself (RFC 9700 section 4.4).
func signInPage(st mcp.ServerStatus) string {
	if at := hostOf(st.AuthEndpoint); st.AuthEndpoint != "" && !strings.EqualFold(at, hostOf(st.AuthServer)) {
		return at
	}
	return ""
}

// signInElsewhere says, for a step-up's prompt, where the browser signs in when that is not the
// authorization server's own host.
func signInElsewhere(st mcp.ServerStatus) string {
	if at := signInPage(st); at != "" {
		return fmt.Sprintf("; your browser signs in at %s, which is not %s", at, hostOf(st.AuthServer))
	}
	return ""
}

// scopesText says which scopes a sign-in asks for.
func scopesText(scopes string) string {
	if scopes == "" {
		return "no particular scope"
	}
	return "the scopes " + strings.Join(strings.Fields(scopes), ", ")
}
