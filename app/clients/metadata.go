package clients

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/netip"
	"net/url"
	"slices"
	"strings"
	"sync"
	"time"

	"golang.org/x/time/rate"
)

// Bounds of fetching client ID metadata documents: what anyone can make Maven fetch by naming
// a URL as a client_id.
const (
	documentTimeout = 5 * time.Second
	maxDocumentSize = 5 << 10
	maxDocumentURL  = 2000
	documentTTL     = 10 * time.Minute // how long a document fetched is used
	failureTTL      = time.Minute      // how long a failed fetch is remembered
	maxDocuments    = 64               // documents (and failures) cached
)

// How often documents are fetched, all sources together: a few at once, then one every 2
// seconds. (The handlers bound each source's authorization requests too.)
const (
	fetchEvery = 2 * time.Second
	fetchBurst = 10
)

// Why a document cannot be used.
var (
	errDocumentURL      = errors.New("a client ID metadata document's URL is https, with a path, and nothing else")
	errDocumentTooLarge = fmt.Errorf("a client ID metadata document is at most %d bytes", maxDocumentSize)
	errFetchBusy        = errors.New("too many client ID metadata documents fetched just now")
)

// isDocumentURL reports whether a client_id names a metadata document (an https URL) rather
// than a client that registered.
func isDocumentURL(id string) bool { return strings.HasPrefix(id, "https://") }

// documents fetches client ID metadata documents and caches them, a bounded number for a
// bounded time.
type documents struct {
	client *http.Client
	now    func() time.Time
	limit  *rate.Limiter

	mu    sync.Mutex
	cache map[string]cachedDocument
}

type cachedDocument struct {
	client  Client
	err     error
	expires time.Time
}

func newDocuments(rt http.RoundTripper, now func() time.Time) *documents {
	return &documents{
		client: &http.Client{Transport: rt, Timeout: documentTimeout,
			// A document is where its URL says; a redirect would name another.
			CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }},
		now: now, limit: rate.NewLimiter(rate.Every(fetchEvery), fetchBurst),
		cache: map[string]cachedDocument{},
	}
}

// get returns the client the document at id describes, from the cache or fetched now.
func (d *documents) get(ctx context.Context, id string) (Client, error) {
	if err := checkDocumentURL(id); err != nil {
		return Client{}, err
	}
	now := d.now()
	d.mu.Lock()
	hit, ok := d.cache[id]
	d.mu.Unlock()
	if ok && now.Before(hit.expires) {
		return hit.client, hit.err
	}
	if !d.limit.AllowN(now, 1) {
		return Client{}, errFetchBusy
	}
	c, err := d.fetch(ctx, id)
	ttl := documentTTL
	if err != nil {
		ttl = failureTTL
	}
	d.put(id, cachedDocument{client: c, err: err, expires: now.Add(ttl)})
	return c, err
}

// put caches one document, making room by forgetting the one that expires first.
func (d *documents) put(id string, doc cachedDocument) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if _, ok := d.cache[id]; !ok && len(d.cache) >= maxDocuments {
		first := ""
		for k, v := range d.cache {
			if first == "" || v.expires.Before(d.cache[first].expires) {
				first = k
			}
		}
		delete(d.cache, first)
	}
	d.cache[id] = doc
}

// checkDocumentURL refuses a client_id URL that is not https with a host and a path (not "/"),
// or that carries a user, a fragment, a dot segment, or an address that is not public (the
// dialer checks the address a name resolves to, as it dials).
func checkDocumentURL(id string) error {
	u, err := url.Parse(id)
	if err != nil || len(id) > maxDocumentURL || u.Scheme != "https" || u.Host == "" || u.User != nil ||
		u.Fragment != "" || strings.Contains(id, "#") || u.Path == "" || u.Path == "/" {
		return fmt.Errorf("%w: %q", errDocumentURL, id)
	}
	for _, seg := range strings.Split(u.Path, "/") {
		if seg == "." || seg == ".." {
			return fmt.Errorf("%w: %q", errDocumentURL, id)
		}
	}
	if a, err := netip.ParseAddr(strings.Trim(u.Hostname(), "[]")); err == nil && !publicAddr(a) {
		return fmt.Errorf("%w: %s", errNotPublic, a)
	}
	return nil
}

// document is a client ID metadata document: the fields Maven reads.
type document struct {
	ClientID                string   `json:"client_id"`
	ClientName              string   `json:"client_name"`
	RedirectURIs            []string `json:"redirect_uris"`
	GrantTypes              []string `json:"grant_types"`
	ResponseTypes           []string `json:"response_types"`
	TokenEndpointAuthMethod string   `json:"token_endpoint_auth_method"`
	ClientSecret            string   `json:"client_secret"`
}

// fetch reads the document at id, at most maxDocumentSize bytes within documentTimeout (the
// client's, which covers reading the body too), and checks it describes a public client of the
// code flow whose client_id is id itself.
func (d *documents) fetch(ctx context.Context, id string) (Client, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, id, nil)
	if err != nil {
		return Client{}, fmt.Errorf("%w: %w", errDocumentURL, err)
	}
	req.Header.Set("Accept", "application/json")
	resp, err := d.client.Do(req)
	if err != nil {
		return Client{}, fmt.Errorf("fetch %s: %w", id, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return Client{}, fmt.Errorf("fetch %s: %s", id, resp.Status)
	}
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxDocumentSize+1))
	if err != nil {
		return Client{}, fmt.Errorf("fetch %s: %w", id, err)
	}
	if len(body) > maxDocumentSize {
		return Client{}, errDocumentTooLarge
	}
	var doc document
	dec := json.NewDecoder(bytes.NewReader(body))
	if err := dec.Decode(&doc); err != nil {
		return Client{}, badMetadata("the document at %s is not a JSON object: %v", id, err)
	}
	return documentClient(id, doc)
}

// documentClient is the client doc describes, or why it cannot be one.
func documentClient(id string, doc document) (Client, error) {
	switch {
	case doc.ClientID != id:
		return Client{}, badMetadata("the document's client_id is %q, not its URL %q", doc.ClientID, id)
	case doc.ClientSecret != "" || doc.TokenEndpointAuthMethod != "" && doc.TokenEndpointAuthMethod != authNone:
		return Client{}, badMetadata("a client ID metadata document describes a public client (token_endpoint_auth_method \"none\"), with no secret")
	}
	grants, err := checkGrants(doc.GrantTypes, doc.ResponseTypes)
	if err != nil {
		return Client{}, err
	}
	name, err := checkClientName(doc.ClientName)
	if err != nil {
		return Client{}, err
	}
	if name == unnamed {
		u, _ := url.Parse(id)
		name = u.Host
	}
	redirects, err := checkRedirectURIs(doc.RedirectURIs)
	if err != nil {
		return Client{}, err
	}
	return Client{ID: id, Kind: KindMetadata, State: StatePending, Name: name, RedirectURIs: slices.Clone(redirects),
		GrantTypes: grants, AuthMethod: authNone}, nil
}
