package hatest

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"
)

// oauthImpl is the flow's OAuth implementation: McpRegisteredOAuth2Implementation for a
// registered client (LocalOAuth2ImplementationWithPkce, with the redirect URI it registered and
// client_secret_basic when it registered so), MCPAuthImplementation (PKCE as well) for an
// application credential.
type oauthImpl struct {
	ha                     *HomeAssistant
	clientID, clientSecret string
	method                 string
	pkce                   string // the code verifier; empty without PKCE
	authorizeURL, tokenURL string
	redirectURI            string
}

// newVerifier is generate_code_verifier(128): secrets.token_urlsafe(96)[:128].
func newVerifier() string { return base64.RawURLEncoding.EncodeToString(randomBytes(96))[:128] }

func challenge(verifier string) string {
	sum := sha256.Sum256([]byte(verifier))
	return base64.RawURLEncoding.EncodeToString(sum[:])
}

// authorizeRequest is async_generate_authorize_url: response_type, client_id, redirect_uri and the
// signed state, then the implementation's extra data (the PKCE challenge), then the flow's.
func (o *oauthImpl) authorizeRequest(state string, flowExtra [][2]string) string {
	params := [][2]string{{"response_type", "code"}, {"client_id", o.clientID}, {"redirect_uri", o.redirectURI}, {"state", state}}
	if o.pkce != "" {
		params = append(params, [2]string{"code_challenge", challenge(o.pkce)}, [2]string{"code_challenge_method", "S256"})
	}
	params = append(params, flowExtra...)
	var q []string
	for _, p := range params {
		q = append(q, url.QueryEscape(p[0])+"="+url.QueryEscape(p[1]))
	}
	sep := "?"
	if strings.Contains(o.authorizeURL, "?") {
		sep = "&"
	}
	return o.authorizeURL + sep + strings.Join(q, "&")
}

// TokenError is a token request the server refused (aiohttp's ClientResponseError).
type TokenError struct {
	Status int
	Code   string // the answer's "error"
}

func (e *TokenError) Error() string {
	return fmt.Sprintf("token request failed (%d): %s", e.Status, e.Code)
}

// exchange is async_resolve_external_data and async_step_creation: the code, the redirect URI
// the state carried and the verifier, for a token that must say when it expires.
func (o *oauthImpl) exchange(ctx context.Context, code, redirectURI string) (Token, error) {
	form := url.Values{"grant_type": {"authorization_code"}, "code": {code}, "redirect_uri": {redirectURI}}
	if o.pkce != "" {
		form.Set("code_verifier", o.pkce)
	}
	raw, err := o.tokenRequest(ctx, form)
	var te *TokenError
	switch {
	case errors.As(err, &te) && te.Status == http.StatusUnauthorized:
		return Token{}, &Abort{Reason: "oauth_unauthorized", Err: err}
	case errors.Is(err, context.DeadlineExceeded):
		return Token{}, &Abort{Reason: "oauth_timeout", Err: err}
	case err != nil:
		return Token{}, &Abort{Reason: "oauth_failed", Err: err}
	}
	tok, err := decodeToken(raw, Token{}, o.ha.opts.Now())
	if err != nil {
		return Token{}, &Abort{Reason: "oauth_error", Err: err}
	}
	return tok, nil
}

// refresh is async_refresh_token: the refresh grant, its answer laid over the old token
// ({**token, **new_token}, so a refresh token not sent again is kept), expires_at anew.
func (o *oauthImpl) refresh(ctx context.Context, old Token, now time.Time) (Token, error) {
	raw, err := o.tokenRequest(ctx, url.Values{"grant_type": {"refresh_token"}, "refresh_token": {old.RefreshToken}})
	if err != nil {
		return Token{}, err
	}
	return decodeToken(raw, old, now)
}

// decodeToken lays a token answer over base and computes expires_at from expires_in, which
// must be there and be a number ("Force int for non-compliant oauth2 providers").
func decodeToken(raw []byte, base Token, now time.Time) (Token, error) {
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(raw, &fields); err != nil {
		return Token{}, fmt.Errorf("the token answer: %w", err)
	}
	exp, ok := fields["expires_in"]
	if !ok {
		return Token{}, errors.New("invalid token: no expires_in")
	}
	n, err := strconv.ParseFloat(strings.Trim(string(exp), `"`), 64)
	if err != nil {
		return Token{}, fmt.Errorf("expires_in: %w", err)
	}
	delete(fields, "expires_in")
	tok := base
	for k, v := range fields {
		var s string
		_ = json.Unmarshal(v, &s)
		switch k {
		case "access_token":
			tok.AccessToken = s
		case "refresh_token":
			tok.RefreshToken = s
		case "token_type":
			tok.TokenType = s
		}
	}
	tok.ExpiresIn = int(n)
	tok.ExpiresAt = unixSeconds(now) + float64(tok.ExpiresIn)
	return tok, nil
}

// tokenRequest is _token_request: a form POST with client_id (and the secret, in the body, or
// as HTTP Basic for client_secret_basic).
func (o *oauthImpl) tokenRequest(ctx context.Context, form url.Values) ([]byte, error) {
	form.Set("client_id", o.clientID)
	basic := o.method == authBasic && o.clientSecret != ""
	if o.clientSecret != "" && !basic {
		form.Set("client_secret", o.clientSecret)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, o.tokenURL, strings.NewReader(form.Encode()))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	if basic {
		req.SetBasicAuth(url.QueryEscape(o.clientID), url.QueryEscape(o.clientSecret))
	}
	res, err := o.ha.http.Do(req)
	if err != nil {
		return nil, err
	}
	defer res.Body.Close()
	raw, err := io.ReadAll(io.LimitReader(res.Body, 1<<20))
	if err != nil {
		return nil, err
	}
	if res.StatusCode >= 400 {
		var e struct {
			Error string `json:"error"`
		}
		_ = json.Unmarshal(raw, &e)
		return nil, &TokenError{Status: res.StatusCode, Code: e.Error}
	}
	return raw, nil
}

// encodeState is _encode_jwt: the flow id and the redirect URI, signed (HS256) with this
// instance's secret.
func (ha *HomeAssistant) encodeState(flowID, redirectURI string) string {
	enc := base64.RawURLEncoding
	header := enc.EncodeToString([]byte(`{"alg":"HS256","typ":"JWT"}`))
	claims, _ := json.Marshal(map[string]string{"flow_id": flowID, "redirect_uri": redirectURI})
	signed := header + "." + enc.EncodeToString(claims)
	mac := hmac.New(sha256.New, ha.jwtSecret)
	mac.Write([]byte(signed))
	return signed + "." + enc.EncodeToString(mac.Sum(nil))
}

// decodeState is _decode_jwt: the claims of a state this instance signed, else false.
func (ha *HomeAssistant) decodeState(state string) (flowID, redirectURI string, ok bool) {
	parts := strings.Split(state, ".")
	if len(parts) != 3 {
		return "", "", false
	}
	enc := base64.RawURLEncoding
	mac := hmac.New(sha256.New, ha.jwtSecret)
	mac.Write([]byte(parts[0] + "." + parts[1]))
	sig, err := enc.DecodeString(parts[2])
	if err != nil || !hmac.Equal(sig, mac.Sum(nil)) {
		return "", "", false
	}
	raw, err := enc.DecodeString(parts[1])
	var claims struct {
		FlowID      string `json:"flow_id"`
		RedirectURI string `json:"redirect_uri"`
	}
	if err != nil || json.Unmarshal(raw, &claims) != nil {
		return "", "", false
	}
	return claims.FlowID, claims.RedirectURI, true
}

// callbackInput is what the callback hands its flow (user_input).
type callbackInput struct {
	code, err, redirectURI string
}

// callback is OAuth2AuthorizeCallbackView: the authorization server's answer, in the user's
// browser, resumes the flow whose id the signed state carries.
func (ha *HomeAssistant) callback(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	if !q.Has("state") {
		fmt.Fprint(w, "Missing state parameter")
		return
	}
	flowID, redirectURI, ok := ha.decodeState(q.Get("state"))
	if !ok {
		http.Error(w, "Invalid state. Is My Home Assistant configured to go to the right instance?", http.StatusBadRequest)
		return
	}
	in := callbackInput{redirectURI: redirectURI}
	switch {
	case q.Has("code"):
		in.code = q.Get("code")
	case q.Has("error"):
		in.err = q.Get("error")
	default:
		fmt.Fprint(w, "Missing code or error parameter")
		return
	}
	ha.mu.Lock()
	f := ha.flows[flowID]
	delete(ha.flows, flowID)
	ha.mu.Unlock()
	if f != nil {
		f.back <- in
	}
	w.Header().Set("Content-Type", "text/html")
	fmt.Fprint(w, "<script>window.close()</script>")
}
