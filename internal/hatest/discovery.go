package hatest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
)

// errNotFound is _async_fetch_any's NotFoundError: a 404, which discovery reads as "none here".
var errNotFound = fmt.Errorf("%w: not found", errCannotConnect)

// fetchAny is _async_fetch_any: every URL at once, the first success wins; when all fail, the
// first failure to arrive is the answer (a 404 is errNotFound, another status or a transport
// error errCannotConnect, a timeout errTimeoutConnect).
func (ha *HomeAssistant) fetchAny(ctx context.Context, urls []string) ([]byte, error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel() // "for task in tasks: task.cancel()"
	type answer struct {
		body []byte
		err  error
	}
	answers := make(chan answer, len(urls))
	for _, u := range urls {
		go func() {
			body, err := ha.fetch(ctx, u)
			answers <- answer{body, err}
		}()
	}
	var first error
	for range urls {
		a := <-answers
		if a.err == nil {
			return a.body, nil
		}
		if first == nil {
			first = a.err
		}
	}
	return nil, first
}

// fetch is one of fetchAny's GETs, with httpx's defaults.
func (ha *HomeAssistant) fetch(ctx context.Context, u string) ([]byte, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", errCannotConnect, err)
	}
	res, err := ha.http.Do(req)
	switch {
	case errors.Is(err, context.DeadlineExceeded):
		return nil, fmt.Errorf("%w: %w", errTimeoutConnect, err)
	case err != nil:
		return nil, fmt.Errorf("%w: %w", errCannotConnect, err)
	}
	defer res.Body.Close()
	body, err := io.ReadAll(io.LimitReader(res.Body, 1<<20))
	switch {
	case err != nil:
		return nil, fmt.Errorf("%w: %w", errCannotConnect, err)
	case res.StatusCode == http.StatusNotFound:
		return nil, fmt.Errorf("%w: GET %s", errNotFound, u)
	case res.StatusCode >= 400:
		return nil, fmt.Errorf("%w: GET %s: %s", errCannotConnect, u, res.Status)
	}
	return body, nil
}

// resourceMetadata is RFC 9728's document, as config_flow.py's ResourceMetadata keeps it.
type resourceMetadata struct {
	AuthorizationServers []string `json:"authorization_servers"`
	ScopesSupported      []string `json:"scopes_supported"`
	Resource             string   `json:"resource"`
}

// discoverProtectedResource is async_discover_protected_resource: the URL the 401 named, then
// the path-inserted and the root well-known URLs, one at a time. A document counts only if its
// resource is exactly the MCP server's URL and it names an authorization server.
func (ha *HomeAssistant) discoverProtectedResource(ctx context.Context, headerURL, serverURL string) (*resourceMetadata, error) {
	u, err := url.Parse(serverURL)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", errCannotConnect, err)
	}
	urls := []string{}
	if headerURL != "" {
		urls = append(urls, headerURL)
	}
	for _, path := range []string{"/.well-known/oauth-protected-resource" + u.Path, "/.well-known/oauth-protected-resource"} {
		fallback := (&url.URL{Scheme: u.Scheme, Host: u.Host, Path: path}).String()
		if !contains(urls, fallback) {
			urls = append(urls, fallback)
		}
	}
	var lastErr error
	sawInvalid := false
	for _, doc := range urls {
		body, err := ha.fetchAny(ctx, []string{doc})
		switch {
		case errors.Is(err, errNotFound):
			continue
		case err != nil:
			lastErr = err
			continue
		}
		var m resourceMetadata
		if json.Unmarshal(body, &m) != nil || len(m.AuthorizationServers) == 0 || m.Resource == "" || m.Resource != serverURL {
			sawInvalid = true // "Ignoring OAuth resource metadata from %s for %s"
			continue
		}
		return &m, nil
	}
	if lastErr != nil && !sawInvalid {
		return nil, lastErr
	}
	return nil, fmt.Errorf("%w: OAuth resource metadata is invalid", errCannotConnect)
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// oauthConfig is config_flow.py's OAuthConfig.
type oauthConfig struct {
	authorizeURL, tokenURL string
	scopes                 []string
	registrationEndpoint   string
	// authMethods is token_endpoint_auth_methods_supported: nil when the document leaves it
	// out (RFC 8414's default, client_secret_basic), empty when it is not a list of strings.
	authMethods []string
}

// discoverAuthorizationServer is async_discover_authorization_server (RFC 8414, with OpenID
// Connect's document as another try); without any document, /authorize and /token.
func (ha *HomeAssistant) discoverAuthorizationServer(ctx context.Context, asURL string) (*oauthConfig, error) {
	u, err := url.Parse(asURL)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", errCannotConnect, err)
	}
	at := func(path string) string { return (&url.URL{Scheme: u.Scheme, Host: u.Host, Path: path}).String() }
	paths := []string{"/.well-known/oauth-authorization-server", "/.well-known/openid-configuration"}
	if u.Path != "" && u.Path != "/" {
		paths = []string{"/.well-known/oauth-authorization-server" + u.Path, "/.well-known/openid-configuration" + u.Path,
			u.Path + "/.well-known/openid-configuration"}
	}
	var urls []string
	for _, p := range paths {
		urls = append(urls, at(p))
	}
	body, err := ha.fetchAny(ctx, urls)
	if errors.Is(err, errNotFound) {
		return &oauthConfig{authorizeURL: at("/authorize"), tokenURL: at("/token")}, nil
	}
	if err != nil {
		return nil, err
	}
	var data map[string]json.RawMessage
	if err := json.Unmarshal(body, &data); err != nil {
		return nil, fmt.Errorf("authorization server metadata: %w", err)
	}
	var cfg oauthConfig
	if json.Unmarshal(data["authorization_endpoint"], &cfg.authorizeURL) != nil || json.Unmarshal(data["token_endpoint"], &cfg.tokenURL) != nil {
		return nil, errors.New("authorization server metadata without its endpoints") // a KeyError: "unknown"
	}
	for _, e := range []*string{&cfg.authorizeURL, &cfg.tokenURL} {
		if strings.HasPrefix(*e, "/") {
			*e = at(*e)
		}
	}
	_ = json.Unmarshal(data["scopes_supported"], &cfg.scopes)
	var reg string
	if json.Unmarshal(data["registration_endpoint"], &reg) == nil && reg != "" {
		ref, err := url.Parse(reg)
		if err != nil {
			return nil, fmt.Errorf("registration endpoint: %w", err)
		}
		cfg.registrationEndpoint = u.ResolveReference(ref).String()
	}
	if raw, ok := data["token_endpoint_auth_methods_supported"]; ok {
		cfg.authMethods = stringList(raw)
	}
	return &cfg, nil
}

// stringList is _string_list for a key that is there: a list of strings as it is, anything
// else (null, a string, a mixed list) empty, so that registration fails.
func stringList(raw json.RawMessage) []string {
	var list []any
	out := []string{}
	if json.Unmarshal(raw, &list) != nil {
		return out
	}
	for _, v := range list {
		s, ok := v.(string)
		if !ok {
			return []string{}
		}
		out = append(out, s)
	}
	return out
}
