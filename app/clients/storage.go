package clients

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"time"

	"github.com/ory/fosite"
	"github.com/ory/fosite/handler/oauth2"
	"github.com/ory/fosite/handler/pkce"
)

// storage is fosite's storage over the Store: clients (registered ones, and documents fetched
// by their URL), authorization codes, PKCE challenges, access and refresh tokens. fosite gives
// it a token's signature, never the token.
type storage struct{ s *Service }

var (
	_ fosite.Storage                = (*storage)(nil)
	_ oauth2.CoreStorage            = (*storage)(nil)
	_ oauth2.TokenRevocationStorage = (*storage)(nil)
	_ pkce.PKCERequestStorage       = (*storage)(nil)
)

// GetClient implements fosite.ClientManager: a registered client in any state, or the client
// the metadata document at an https URL describes, fetched (and cached) each time it is asked
// for, so that the consent page shows what the document says now; while it cannot be fetched,
// an approved one is what the owner approved. A static token is no OAuth client.
func (st *storage) GetClient(ctx context.Context, id string) (fosite.Client, error) {
	if !isDocumentURL(id) {
		return st.stored(ctx, id)
	}
	doc, err := st.s.documents.get(ctx, id)
	if err == nil {
		return st.s.oauthClient(doc), nil
	}
	if c, serr := st.s.store.Client(ctx, id); serr == nil && c.State == StateApproved {
		return st.s.oauthClient(c), nil
	}
	return nil, fmt.Errorf("%w: %w", fosite.ErrNotFound, err)
}

// stored is the client of a stored token: as the database holds it, so that checking an
// agent's token never waits for a document to be fetched.
func (st *storage) stored(ctx context.Context, id string) (fosite.Client, error) {
	c, err := st.s.store.Client(ctx, id)
	switch {
	case errors.Is(err, ErrNotFound):
		return nil, fosite.ErrNotFound
	case err != nil:
		return nil, err
	case c.Kind == KindStatic:
		return nil, fosite.ErrNotFound
	case c.State == StatePending && !c.CreatedAt.After(st.s.now().Add(-PendingLifetime)):
		// Expired, though not swept yet.
		return nil, fosite.ErrNotFound
	}
	return st.s.oauthClient(c), nil
}

// ClientAssertionJWTValid implements fosite.ClientManager. No client authenticates with a
// signed assertion here, so no assertion's id is ever known.
func (st *storage) ClientAssertionJWTValid(context.Context, string) error { return nil }

// SetClientAssertionJWT implements fosite.ClientManager; see ClientAssertionJWTValid.
func (st *storage) SetClientAssertionJWT(context.Context, string, time.Time) error { return nil }

// storedRequest is what is kept of fosite's request with a token: the form only as fosite
// sanitized it (a PKCE challenge, for one), never a secret.
type storedRequest struct {
	ID                string          `json:"id"`
	RequestedAt       time.Time       `json:"requested_at"`
	ClientID          string          `json:"client_id"`
	RequestedScope    []string        `json:"requested_scope,omitempty"`
	GrantedScope      []string        `json:"granted_scope,omitempty"`
	RequestedAudience []string        `json:"requested_audience,omitempty"`
	GrantedAudience   []string        `json:"granted_audience,omitempty"`
	Form              url.Values      `json:"form,omitempty"`
	Session           json.RawMessage `json:"session"`
}

// put stores r under signature as a token of kind, expiring as its session says.
func (st *storage) put(ctx context.Context, kind TokenKind, signature string, r fosite.Requester, expiresAs fosite.TokenType) error {
	session, err := json.Marshal(r.GetSession())
	if err != nil {
		return fmt.Errorf("encode an OAuth session: %w", err)
	}
	data, err := json.Marshal(storedRequest{
		ID: r.GetID(), RequestedAt: r.GetRequestedAt(), ClientID: r.GetClient().GetID(),
		RequestedScope: r.GetRequestedScopes(), GrantedScope: r.GetGrantedScopes(),
		RequestedAudience: r.GetRequestedAudience(), GrantedAudience: r.GetGrantedAudience(),
		Form: r.GetRequestForm(), Session: session,
	})
	if err != nil {
		return fmt.Errorf("encode an OAuth request: %w", err)
	}
	var expires time.Time
	if r.GetSession() != nil {
		expires = r.GetSession().GetExpiresAt(expiresAs)
	}
	return st.s.store.CreateToken(ctx, Token{Kind: kind, Signature: signature, RequestID: r.GetID(),
		ClientID: r.GetClient().GetID(), Active: true, ExpiresAt: expires, Request: data})
}

// get reads the token of kind under signature into a request, its session decoded into
// session (a new one when nil). It returns fosite.ErrNotFound for none, and inactive for a
// token that is not active, with the request.
func (st *storage) get(ctx context.Context, kind TokenKind, signature string, session fosite.Session, inactive error) (fosite.Requester, error) {
	t, err := st.s.store.Token(ctx, kind, signature)
	if errors.Is(err, ErrNotFound) {
		return nil, fosite.ErrNotFound
	}
	if err != nil {
		return nil, err
	}
	var sr storedRequest
	if err := json.Unmarshal(t.Request, &sr); err != nil {
		return nil, fmt.Errorf("decode an OAuth request: %w", err)
	}
	if session == nil {
		session = NewSession()
	}
	if err := json.Unmarshal(sr.Session, session); err != nil {
		return nil, fmt.Errorf("decode an OAuth session: %w", err)
	}
	client, err := st.stored(ctx, sr.ClientID)
	if err != nil {
		return nil, err
	}
	r := &fosite.Request{
		ID: sr.ID, RequestedAt: sr.RequestedAt, Client: client, Session: session,
		RequestedScope: sr.RequestedScope, GrantedScope: sr.GrantedScope,
		RequestedAudience: sr.RequestedAudience, GrantedAudience: sr.GrantedAudience,
		Form: sr.Form,
	}
	if r.Form == nil {
		r.Form = url.Values{}
	}
	if !t.Active {
		return r, inactive
	}
	return r, nil
}

// CreateAuthorizeCodeSession implements oauth2.AuthorizeCodeStorage.
func (st *storage) CreateAuthorizeCodeSession(ctx context.Context, signature string, r fosite.Requester) error {
	return st.put(ctx, TokenCode, signature, r, fosite.AuthorizeCode)
}

// GetAuthorizeCodeSession implements oauth2.AuthorizeCodeStorage: a used code is
// fosite.ErrInvalidatedAuthorizeCode, with its request, so that its reuse revokes what it issued.
func (st *storage) GetAuthorizeCodeSession(ctx context.Context, signature string, session fosite.Session) (fosite.Requester, error) {
	return st.get(ctx, TokenCode, signature, session, fosite.ErrInvalidatedAuthorizeCode)
}

// InvalidateAuthorizeCodeSession implements oauth2.AuthorizeCodeStorage. A code already used
// fails, so two exchanges of one code racing each other issue tokens once.
func (st *storage) InvalidateAuthorizeCodeSession(ctx context.Context, signature string) error {
	return st.s.store.DeactivateToken(ctx, TokenCode, signature)
}

// CreatePKCERequestSession implements pkce.PKCERequestStorage.
func (st *storage) CreatePKCERequestSession(ctx context.Context, signature string, r fosite.Requester) error {
	return st.put(ctx, TokenPKCE, signature, r, fosite.AuthorizeCode)
}

// GetPKCERequestSession implements pkce.PKCERequestStorage.
func (st *storage) GetPKCERequestSession(ctx context.Context, signature string, session fosite.Session) (fosite.Requester, error) {
	return st.get(ctx, TokenPKCE, signature, session, fosite.ErrNotFound)
}

// DeletePKCERequestSession implements pkce.PKCERequestStorage.
func (st *storage) DeletePKCERequestSession(ctx context.Context, signature string) error {
	return st.s.store.DeleteToken(ctx, TokenPKCE, signature)
}

// CreateAccessTokenSession implements oauth2.AccessTokenStorage.
func (st *storage) CreateAccessTokenSession(ctx context.Context, signature string, r fosite.Requester) error {
	return st.put(ctx, TokenAccess, signature, r, fosite.AccessToken)
}

// GetAccessTokenSession implements oauth2.AccessTokenStorage.
func (st *storage) GetAccessTokenSession(ctx context.Context, signature string, session fosite.Session) (fosite.Requester, error) {
	return st.get(ctx, TokenAccess, signature, session, fosite.ErrNotFound)
}

// DeleteAccessTokenSession implements oauth2.AccessTokenStorage.
func (st *storage) DeleteAccessTokenSession(ctx context.Context, signature string) error {
	defer st.s.tokens.revoked()
	return st.s.store.DeleteToken(ctx, TokenAccess, signature)
}

// CreateRefreshTokenSession implements oauth2.RefreshTokenStorage.
func (st *storage) CreateRefreshTokenSession(ctx context.Context, signature, _ string, r fosite.Requester) error {
	return st.put(ctx, TokenRefresh, signature, r, fosite.RefreshToken)
}

// GetRefreshTokenSession implements oauth2.RefreshTokenStorage: a rotated refresh token is
// fosite.ErrInactiveToken, with its request, which is how fosite recognises its reuse and
// revokes the family (RefreshTokenGrantHandler.handleRefreshTokenReuse).
func (st *storage) GetRefreshTokenSession(ctx context.Context, signature string, session fosite.Session) (fosite.Requester, error) {
	return st.get(ctx, TokenRefresh, signature, session, fosite.ErrInactiveToken)
}

// DeleteRefreshTokenSession implements oauth2.RefreshTokenStorage.
func (st *storage) DeleteRefreshTokenSession(ctx context.Context, signature string) error {
	return st.s.store.DeleteToken(ctx, TokenRefresh, signature)
}

// RotateRefreshToken implements oauth2.RefreshTokenStorage: the refresh token shown is spent,
// with every other refresh token and the access tokens of its authorization. One spent already
// (two refreshes racing) fails, so only one of them gets new tokens.
func (st *storage) RotateRefreshToken(ctx context.Context, requestID, signature string) error {
	err := st.s.store.RotateRefresh(ctx, requestID, signature)
	st.s.tokens.revoked()
	if errors.Is(err, ErrTokenSpent) {
		return fmt.Errorf("%w: %w", fosite.ErrSerializationFailure, err)
	}
	return err
}

// RevokeRefreshToken implements oauth2.TokenRevocationStorage: every refresh token of the
// authorization becomes inactive (kept, so that its reuse is still recognised).
func (st *storage) RevokeRefreshToken(ctx context.Context, requestID string) error {
	return st.s.store.DeactivateTokens(ctx, TokenRefresh, requestID)
}

// RevokeAccessToken implements oauth2.TokenRevocationStorage: every access token of the
// authorization goes.
func (st *storage) RevokeAccessToken(ctx context.Context, requestID string) error {
	defer st.s.tokens.revoked()
	return st.s.store.DeleteTokens(ctx, TokenAccess, requestID)
}
