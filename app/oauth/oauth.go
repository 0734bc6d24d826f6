// Package oauth signs Maven in to OAuth-protected MCP servers (OAuth 2.1 with PKCE, resource
// indicators, and client registration by metadata document, configuration or dynamic
// registration), with go-sdk's auth and oauthex packages doing the protocol. It adds what a
// daemon needs around them: a sign-in is the owner's act, begun behind a step-up and finished
// on Maven's own callback, bound to the owner's browser session, used once and expiring; tokens
// and registered clients are sealed in the vault (docs/design.md#rule-22), refreshed, and
// forgotten when revoked; a server that wants a sign-in waits for the owner, never redials.
package oauth

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"slices"
	"strings"
	"time"

	"golang.org/x/oauth2"

	"maven/app/activity"
	"maven/app/reveal"
	"maven/app/vault"
)

// Vault seals each server's credentials; vault.Gate implements it. OpenOAuth fails with
// vault.ErrNotFound when none are sealed and vault.ErrLocked while they cannot be read;
// OAuthServers and DeleteOAuth work while locked.
type Vault interface {
	SealOAuth(ctx context.Context, server string, value []byte) error
	OpenOAuth(ctx context.Context, server string) ([]byte, error)
	DeleteOAuth(ctx context.Context, server string) error
	OAuthServers(ctx context.Context) ([]string, error)
}

// Recorder appends to the activity feed; activity.Log implements it.
type Recorder interface {
	Append(ctx context.Context, events ...activity.Event) error
}

// Credentials are what Maven keeps, sealed, of one server's sign-in: the client it used and
// the tokens it got.
type Credentials struct {
	Issuer       string           `json:"issuer"`
	Resource     string           `json:"resource"`
	ClientID     string           `json:"client_id"`
	ClientSecret string           `json:"client_secret,omitempty"`
	TokenURL     string           `json:"token_url"`
	AuthStyle    oauth2.AuthStyle `json:"auth_style"`
	// Scopes are those granted (or, when the token does not say, those requested).
	Scopes []string `json:"scopes,omitempty"`
	// Token is nil once it was refused or revoked: the registered client is kept.
	Token *oauth2.Token `json:"token,omitempty"`
	// Registered is set when Maven registered the client itself (dynamic client registration)
	// with the callbacks Redirects: a later sign-in at the same issuer reuses it.
	Registered bool     `json:"registered,omitempty"`
	Redirects  []string `json:"redirects,omitempty"`
}

// config is the oauth2 configuration that refreshes the credentials' token.
func (c Credentials) config() *oauth2.Config {
	return &oauth2.Config{ClientID: c.ClientID, ClientSecret: c.ClientSecret, Scopes: c.Scopes,
		Endpoint: oauth2.Endpoint{TokenURL: c.TokenURL, AuthStyle: c.AuthStyle}}
}

// Options tune a Service; zero values take the defaults.
type Options struct {
	// Origins are Maven's browser origins: a callback is registered on each, and the first
	// https one, if any, serves Maven's client ID metadata document.
	Origins []string
	// HTTP talks to authorization servers (a client with a 30s timeout).
	HTTP *http.Client
	// FlowTTL bounds a sign-in from its step-up to the callback (10m).
	FlowTTL time.Duration
	// MaxFlows bounds the sign-ins in progress, all sessions together (8).
	MaxFlows int
	Logger   *slog.Logger
	Now      func() time.Time
}

// Defaults for Options.
const (
	DefaultFlowTTL  = 10 * time.Minute
	DefaultMaxFlows = 8
)

// CallbackPath is Maven's redirect URI on each of its origins for a client that is the same at
// every authorization server: its client ID metadata document (which lists it) and a client the
// owner registered (at the URI the README names). A client Maven registers dynamically has one
// of its own per authorization server, CallbackPathFor.
const CallbackPath = "/oauth/callback"

// CallbackPathFor is the redirect URI path of the clients Maven registers at the authorization
// server issuer: CallbackPath and a name of the issuer. Each authorization server sends the
// browser back to its own, and a callback is accepted only at the one of the sign-in's
// authorization server: an authorization server that another one's metadata sends the browser
// to (a mix-up, RFC 9700 section 4.4) does not know Maven's client there with that redirect
// URI, and its answer cannot pass for the other's.
func CallbackPathFor(issuer string) string {
	h := sha256.Sum256([]byte(issuer))
	return CallbackPath + "/" + hex.EncodeToString(h[:8])
}

// MetadataDocumentPath is where Maven serves its client ID metadata document, on its https
// origin: its URL is Maven's client id (the one go-sdk's reference client and the conformance
// suite use too).
const MetadataDocumentPath = "/client-metadata.json"

// Service keeps the servers' sealed credentials and the sign-ins in progress. It is safe for
// concurrent use.
type Service struct {
	vault  Vault
	rec    Recorder
	opts   Options
	logger *slog.Logger
	flows  *flows
	stale  staleClients
}

// New returns a Service over v that records sign-ins in rec (nil records nothing).
func New(v Vault, rec Recorder, opts Options) *Service {
	if opts.HTTP == nil {
		opts.HTTP = &http.Client{Timeout: 30 * time.Second}
	}
	if opts.HTTP.CheckRedirect == nil {
		c := *opts.HTTP
		c.CheckRedirect = keepCredentialsHome
		opts.HTTP = &c
	}
	if opts.FlowTTL <= 0 {
		opts.FlowTTL = DefaultFlowTTL
	}
	if opts.MaxFlows <= 0 {
		opts.MaxFlows = DefaultMaxFlows
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	s := &Service{vault: v, rec: rec, opts: opts, logger: opts.Logger}
	s.flows = newFlows(opts.MaxFlows, opts.FlowTTL, opts.Now)
	return s
}

// keepCredentialsHome is the redirect policy of the client that talks to authorization
// servers: a request that carries credentials (a registration, a code exchange, a refresh: every
// request but a metadata GET) is not sent on to another origin. net/http would post its body
// again after a 307 or 308 (the code and its verifier, the refresh token, a client secret) to
// wherever it points, and keep a Basic Authorization header for the same host name on any port.
func keepCredentialsHome(req *http.Request, via []*http.Request) error {
	if len(via) >= 10 {
		return errors.New("stopped after 10 redirects")
	}
	first := via[0]
	if first.Method == http.MethodGet || first.Method == http.MethodHead {
		return nil
	}
	if !strings.EqualFold(req.URL.Scheme+"://"+req.URL.Host, first.URL.Scheme+"://"+first.URL.Host) {
		return fmt.Errorf("the authorization server sent a %s of %s on to another origin (%s): refused, it carries credentials",
			first.Method, first.URL.Redacted(), req.URL.Redacted())
	}
	return nil
}

// HTTPClient is the client that talks to authorization servers, for discovery.
func (s *Service) HTTPClient() *http.Client { return s.opts.HTTP }

// Load opens server's sealed credentials: vault.ErrNotFound if it never signed in,
// vault.ErrLocked while they are sealed.
func (s *Service) Load(ctx context.Context, server string) (Credentials, error) {
	raw, err := s.vault.OpenOAuth(ctx, server)
	if err != nil {
		return Credentials{}, err
	}
	defer clear(raw)
	var c Credentials
	if err := json.Unmarshal(raw, &c); err != nil {
		return Credentials{}, fmt.Errorf("oauth credentials of %s: %w", server, err)
	}
	return c, nil
}

// save seals server's credentials.
func (s *Service) save(ctx context.Context, server string, c Credentials) error {
	raw, err := json.Marshal(c)
	if err != nil {
		return err
	}
	defer clear(raw)
	return s.vault.SealOAuth(ctx, server, raw)
}

// HasMetadataDocument reports whether Maven serves a client ID metadata document: it needs an
// https origin for the authorization server to fetch it from.
func (s *Service) HasMetadataDocument() bool { return s.metadataDocumentURL() != "" }

func (s *Service) metadataDocumentURL() string {
	for _, o := range s.opts.Origins {
		if strings.HasPrefix(o, "https://") {
			return o + MetadataDocumentPath
		}
	}
	return ""
}

// MetadataDocument is Maven's client ID metadata document (draft-ietf-oauth-client-id-metadata-
// document): its client_id is the URL it is served at, and its redirect URIs are the callbacks
// on Maven's https origins. Nil without an https origin.
func (s *Service) MetadataDocument() map[string]any {
	id := s.metadataDocumentURL()
	if id == "" {
		return nil
	}
	var redirects []string
	for _, o := range s.opts.Origins {
		if strings.HasPrefix(o, "https://") {
			redirects = append(redirects, o+CallbackPath)
		}
	}
	return map[string]any{
		"client_id": id, "client_name": clientName, "client_uri": strings.TrimSuffix(id, MetadataDocumentPath),
		"redirect_uris": redirects, "grant_types": []string{"authorization_code", "refresh_token"},
		"response_types": []string{"code"}, "token_endpoint_auth_method": "none",
	}
}

// clientName is how Maven names itself to authorization servers.
const clientName = "Maven"

// record appends one event to the feed, logging a failure.
func (s *Service) record(actor, action, server string, detail map[string]any) {
	if s.rec == nil {
		return
	}
	if detail == nil {
		detail = map[string]any{}
	}
	detail["server"] = server
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := s.rec.Append(ctx, activity.Event{Actor: actor, Action: action, Detail: detail}); err != nil {
		s.logger.Error("activity: record "+action, "server", server, "err", err)
	}
}

// errorText is err's message cut to a length the feed and the card can show.
func errorText(err error) string {
	return reveal.CutError(err.Error(), 512)
}

// isNotFound reports whether err says no credentials are sealed.
func isNotFound(err error) bool { return errors.Is(err, vault.ErrNotFound) }

// ForgetRemoved deletes the sealed credentials (tokens and registered client) of every server
// not among configured, recording each in the activity feed, and returns those servers. It
// works while locked: a server taken out of the config leaves no sign-in behind, and one put
// back asks for a sign-in again.
func (s *Service) ForgetRemoved(ctx context.Context, configured []string) ([]string, error) {
	sealed, err := s.vault.OAuthServers(ctx)
	if err != nil {
		return nil, err
	}
	var forgotten []string
	for _, server := range sealed {
		if slices.Contains(configured, server) {
			continue
		}
		if err := s.vault.DeleteOAuth(ctx, server); err != nil {
			return forgotten, err
		}
		s.stale.set(server, false)
		forgotten = append(forgotten, server)
		s.logger.Info("oauth: the config no longer names this server: its sealed sign-in is forgotten", "server", server)
		s.record("config", activity.ActionSignInForgotten, server, nil)
	}
	return forgotten, nil
}
