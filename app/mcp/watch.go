package mcp

import (
	"context"
	"io"
	"mime"
	"net/http"
	"sync"
	"sync/atomic"
)

// httpWatch sees what go-sdk does not report of one session's HTTP exchanges: how the server
// answered the last POST (a bare url's server that refuses it speaks the older SSE transport),
// and the end of the subscriptions/listen stream on which a 2026-07-28 server pushes its list
// changes. That end is the first sign that such a server is gone: go-sdk sends it no pings, a
// failed POST fails only its own call, and the listen request is never awaited.
type httpWatch struct {
	lastPost atomic.Int32 // HTTP status of the last POST answered; 0 before any

	once        sync.Once
	listenEnded chan struct{} // closed when a listen stream ended other than by Maven
}

func newHTTPWatch() *httpWatch { return &httpWatch{listenEnded: make(chan struct{})} }

// wrap returns base, watched.
func (w *httpWatch) wrap(base http.RoundTripper) http.RoundTripper {
	return &watchedTransport{base: base, w: w}
}

// refusedPost reports whether the server answered the last POST with a 4xx other than 401 and
// 403: the streamable HTTP transport is not served there. 401 and 403 say who may call, not
// how.
func (w *httpWatch) refusedPost() bool {
	code := int(w.lastPost.Load())
	return code >= 400 && code < 500 && code != http.StatusUnauthorized && code != http.StatusForbidden
}

func (w *httpWatch) endListen() { w.once.Do(func() { close(w.listenEnded) }) }

// The header go-sdk names a 2026-07-28 request's method in, and the method of a listen stream.
const (
	methodHeader = "Mcp-Method"
	methodListen = "subscriptions/listen"
)

type watchedTransport struct {
	base http.RoundTripper
	w    *httpWatch
}

func (t *watchedTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := t.base.RoundTrip(req)
	if err != nil {
		return nil, err
	}
	if req.Method == http.MethodPost {
		t.w.lastPost.Store(int32(resp.StatusCode))
	}
	mt, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type"))
	if req.Header.Get(methodHeader) == methodListen && resp.StatusCode == http.StatusOK && mt == "text/event-stream" {
		resp.Body = &listenBody{ReadCloser: resp.Body, ctx: req.Context(), ended: t.w.endListen}
	}
	return resp, nil
}

// listenBody reports the end of a listen stream that Maven did not end itself: when Maven
// closes the session, the request's context is cancelled first.
type listenBody struct {
	io.ReadCloser
	ctx   context.Context
	ended func()
}

func (b *listenBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	if err != nil && b.ctx.Err() == nil {
		b.ended()
	}
	return n, err
}
