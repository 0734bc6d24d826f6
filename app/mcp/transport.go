package mcp

import (
	"context"
	"fmt"
	"io"
	"mime"
	"net/http"
	"net/url"
	"strings"
	"sync"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"maven/app/config"
)

// buildTransport builds the sdk transport of cfg (secrets expanded). Its errors are
// configuration errors. killCtx, once cancelled, kills a stdio server's process group or aborts
// the HTTP requests of a remote one.
//
// This is where a transport gets what it needs to reach its server: the OAuth handler of a
// remote server that wants one goes into remoteTransport. watch sees a remote server's HTTP
// exchanges for the session (watch.go).
func (s *supervisor) buildTransport(cfg config.Server, killCtx context.Context, watch *httpWatch) (sdk.Transport, error) {
	switch cfg.Type {
	case config.TransportStdio:
		return s.stdioTransport(cfg, killCtx)
	case config.TransportHTTP, config.TransportSSE:
		return s.remoteTransport(cfg, killCtx, watch)
	default:
		return nil, fmt.Errorf("unknown transport %q", cfg.Type)
	}
}

// remoteTransport is the streamable HTTP or SSE transport of cfg, sending the configured
// headers to the server's own origin only.
func (s *supervisor) remoteTransport(cfg config.Server, killCtx context.Context, watch *httpWatch) (sdk.Transport, error) {
	u, err := url.Parse(cfg.URL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		// Named as configured: the expanded URL may hold a secret.
		return nil, fmt.Errorf("unusable URL %s", config.Server{Type: cfg.Type, URL: s.cfg.URL}.Target())
	}
	client := &http.Client{Transport: &headerTransport{
		base:    watch.wrap(s.m.opts.Transport),
		origin:  origin(u),
		headers: cfg.Headers,
		kill:    killCtx,
	}}
	if cfg.Type == config.TransportSSE {
		return &sdk.SSEClientTransport{Endpoint: cfg.URL, HTTPClient: client}, nil
	}
	t := &sdk.StreamableClientTransport{Endpoint: cfg.URL, HTTPClient: client}
	s.mu.Lock()
	if s.dialAuth != nil {
		// Its token, if it signed in; a refusal fails the dial with *oauth.NeedsAuthError.
		t.OAuthHandler = s.dialAuth
	}
	s.mu.Unlock()
	return t, nil
}

// origin returns scheme://host of u, lower-cased.
func origin(u *url.URL) string {
	return strings.ToLower(u.Scheme + "://" + u.Host)
}

// headerTransport adds the configured headers to requests for the server's own origin only, and
// takes the OAuth token (go-sdk's Authorization header) off every request for another origin,
// so a redirect or an SSE message endpoint elsewhere never receives either; it aborts every
// request once kill is cancelled. It is an http.RoundTripper, not a wrapper of the sdk's
// connection: the sdk finds its streamable connection by type to open the list_changed stream.
type headerTransport struct {
	base    http.RoundTripper
	origin  string
	headers map[string]string
	kill    context.Context
}

func (t *headerTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	ctx, cancel := context.WithCancel(req.Context())
	stop := context.AfterFunc(t.kill, cancel)
	r := req.Clone(ctx)
	if origin(req.URL) == t.origin {
		for k, v := range t.headers {
			// The sdk's own headers (session, protocol version) win.
			if r.Header.Get(k) == "" {
				r.Header.Set(k, v)
			}
		}
	} else {
		// A token is for the exact origin it was issued for (scheme, host and port): net/http
		// keeps the sdk's Authorization across a redirect to the same host name on any port, or
		// to a subdomain, and copies the first request's headers onto the next.
		for _, k := range []string{"Authorization", "Cookie"} {
			r.Header.Del(k)
		}
	}
	resp, err := t.base.RoundTrip(r)
	if err != nil {
		stop()
		cancel()
		return nil, err
	}
	body := resp.Body
	if mt, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type")); mt != "text/event-stream" {
		// The sdk reads a JSON answer whole, however long; an event stream it cuts per event.
		body = &limitedBody{ReadCloser: body, left: MaxResponseBytes}
	}
	// The body may be a long-lived event stream: the request context lives until it is closed.
	resp.Body = &cancelBody{ReadCloser: body, done: func() { stop(); cancel() }}
	return resp, nil
}

// MaxResponseBytes bounds an HTTP response that is not an event stream, as go-sdk bounds a
// stdio message and a server-sent event (16 MiB each): past it the read fails, and with it the
// session, instead of the daemon holding whatever a server cares to send.
const MaxResponseBytes = 16 << 20

// errResponseTooLarge fails the read of a body longer than MaxResponseBytes.
var errResponseTooLarge = fmt.Errorf("response longer than %d bytes", MaxResponseBytes)

type limitedBody struct {
	io.ReadCloser
	left int64
}

func (b *limitedBody) Read(p []byte) (int, error) {
	if b.left < 0 {
		return 0, errResponseTooLarge
	}
	// One byte more than is left tells a body that ends at the limit from one that goes on.
	if int64(len(p)) > b.left+1 {
		p = p[:b.left+1]
	}
	n, err := b.ReadCloser.Read(p)
	b.left -= int64(n)
	if b.left < 0 {
		return n, errResponseTooLarge
	}
	return n, err
}

// cancelBody runs done once when the body is closed: it ends the request's context.
type cancelBody struct {
	io.ReadCloser
	once sync.Once
	done func()
}

func (b *cancelBody) Close() error {
	err := b.ReadCloser.Close()
	b.once.Do(b.done)
	return err
}
