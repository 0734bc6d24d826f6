package hatest

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// StatusError is an HTTP answer of 4xx or 5xx to one of a session's POSTs (or the SSE GET):
// httpx's HTTPStatusError, as the MCP SDK raises it.
type StatusError struct {
	Code   int
	Header http.Header
}

func (e *StatusError) Error() string {
	return fmt.Sprintf("HTTP %d %s", e.Code, http.StatusText(e.Code))
}

// protocolVersion is what the Python SDK's ClientSession asks for (LATEST_PROTOCOL_VERSION).
const protocolVersion = "2025-11-25"

// session is one MCP session, opened for one operation and closed after it.
type session struct {
	*sdk.ClientSession
	rec *recorder
}

// fail is what an operation's error means to Home Assistant: the HTTP answer behind it, if
// the server gave one (an HTTPStatusError), else the error itself.
func (s *session) fail(err error) error {
	if se := s.rec.status(); se != nil {
		return fmt.Errorf("%w (%v)", se, err)
	}
	return err
}

// openSession is mcp_client: a session of its own over streamable HTTP at url, with the
// bearer token if there is one; when that fails with 405 (the server may speak the older SSE
// transport) or with an MCP error (a proxy may answer otherwise), a session over SSE at the
// same URL. Any other failure is returned as it is: a *StatusError for an HTTP answer.
func (ha *HomeAssistant) openSession(ctx context.Context, url, token string) (*session, *sdk.InitializeResult, error) {
	rec := &recorder{next: ha.transport(), token: token}
	hc := &http.Client{Transport: rec, Timeout: ha.http.Timeout}
	client := sdk.NewClient(&sdk.Implementation{Name: "mcp", Version: "0.1.0"}, nil)
	opts := &sdk.ClientSessionOptions{ProtocolVersion: protocolVersion}
	cs, err := client.Connect(ctx, &sdk.StreamableClientTransport{Endpoint: url, HTTPClient: hc, MaxRetries: -1}, opts)
	if err == nil {
		ha.opened(false)
		return &session{cs, rec}, cs.InitializeResult(), nil
	}
	se := rec.status()
	var rpcErr *jsonrpc.Error
	if !(se != nil && se.Code == http.StatusMethodNotAllowed) && !errors.As(err, &rpcErr) {
		if se != nil {
			return nil, nil, fmt.Errorf("streamable HTTP: %w", se)
		}
		return nil, nil, fmt.Errorf("streamable HTTP: %w", err)
	}
	// "Streamable HTTP client failed, attempting SSE client".
	rec = &recorder{next: ha.transport(), token: token, sse: true}
	hc = &http.Client{Transport: rec, Timeout: ha.http.Timeout}
	cs, err = client.Connect(ctx, &sdk.SSEClientTransport{Endpoint: url, HTTPClient: hc}, opts)
	if err != nil {
		if se := rec.status(); se != nil {
			return nil, nil, fmt.Errorf("SSE: %w", se)
		}
		return nil, nil, fmt.Errorf("SSE: %w", err)
	}
	ha.opened(true)
	return &session{cs, rec}, cs.InitializeResult(), nil
}

func (ha *HomeAssistant) transport() http.RoundTripper {
	if ha.http.Transport != nil {
		return ha.http.Transport
	}
	return http.DefaultTransport
}

// recorder adds the session's headers (create_async_httpx_client(hass, headers=…)) to every
// request and keeps the first error status a POST or the SSE stream's GET was answered with.
type recorder struct {
	next  http.RoundTripper
	token string
	sse   bool // the SSE transport's, whose GET is the session itself

	mu    sync.Mutex
	first *StatusError
}

func (r *recorder) RoundTrip(req *http.Request) (*http.Response, error) {
	if r.token != "" {
		req = req.Clone(req.Context())
		req.Header.Set("Authorization", "Bearer "+r.token)
	}
	res, err := r.next.RoundTrip(req)
	if err != nil || res.StatusCode < 400 {
		return res, err
	}
	// The streamable transport's standalone GET may be refused (405): that is no failure.
	if req.Method == http.MethodPost || r.sse || res.StatusCode != http.StatusMethodNotAllowed {
		r.mu.Lock()
		if r.first == nil {
			r.first = &StatusError{Code: res.StatusCode, Header: res.Header.Clone()}
		}
		r.mu.Unlock()
	}
	return res, nil
}

func (r *recorder) status() *StatusError {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.first
}
