package mcp

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"
)

func TestHeaderTransportOnlyForItsOrigin(t *testing.T) {
	got := map[string]string{}
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got[r.Host+r.URL.Path] = r.Header.Get("Authorization")
		if r.URL.Path == "/redirect" {
			http.Redirect(w, r, r.URL.Query().Get("to"), http.StatusTemporaryRedirect)
		}
	})
	own := httptest.NewServer(h)
	defer own.Close()
	other := httptest.NewServer(h)
	defer other.Close()

	kill, cancel := context.WithCancel(context.Background())
	defer cancel()
	u, _ := url.Parse(own.URL)
	client := &http.Client{Transport: &headerTransport{
		base: http.DefaultTransport, origin: origin(u),
		headers: map[string]string{"Authorization": "Bearer tok"}, kill: kill,
	}}
	get := func(target string) {
		t.Helper()
		resp, err := client.Get(target)
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
	}
	get(own.URL + "/mcp")
	get(own.URL + "/redirect?to=" + url.QueryEscape(other.URL+"/elsewhere"))

	ownHost, otherHost := own.Listener.Addr().String(), other.Listener.Addr().String()
	if a := got[ownHost+"/mcp"]; a != "Bearer tok" {
		t.Errorf("own origin got Authorization %q", a)
	}
	if a, ok := got[otherHost+"/elsewhere"]; !ok || a != "" {
		t.Errorf("another origin got Authorization %q (reached: %v)", a, ok)
	}
}

func TestHeaderTransportKillAbortsStreams(t *testing.T) {
	started := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		w.WriteHeader(http.StatusOK)
		w.(http.Flusher).Flush()
		close(started)
		<-r.Context().Done()
	}))
	defer srv.Close()
	kill, cancel := context.WithCancel(context.Background())
	u, _ := url.Parse(srv.URL)
	client := &http.Client{Transport: &headerTransport{base: http.DefaultTransport, origin: origin(u), kill: kill}}
	resp, err := client.Get(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	<-started
	done := make(chan error, 1)
	go func() {
		_, err := io.Copy(io.Discard, resp.Body)
		done <- err
	}()
	cancel()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("a stream outlived kill")
	}
}

func TestStderrTailKeepsLinesBounded(t *testing.T) {
	w := newStderrTail(testLogger(t), func(s string) string { return s })
	long := make([]byte, 3*maxStderrLine)
	for i := range long {
		long[i] = 'x'
	}
	w.Write(long)
	if len(w.buf) != maxStderrLine {
		t.Errorf("buffered %d bytes of an unterminated line, want %d", len(w.buf), maxStderrLine)
	}
	w.Write([]byte("\npartial"))
	if string(w.buf) != "partial" {
		t.Errorf("buffer = %q after a newline, want the next line's start", w.buf)
	}
	for i := range 2 * keptStderr {
		fmt.Fprintf(w, "line %d\n", i)
	}
	got := w.lines()
	if len(got) != keptStderr || got[0] != fmt.Sprintf("line %d", keptStderr) || got[len(got)-1] != fmt.Sprintf("line %d", 2*keptStderr-1) {
		t.Errorf("kept %q, want the last %d lines", got, keptStderr)
	}
	w.Write(long)
	w.flush()
	if last := w.lines()[keptStderr-1]; len(last) > keptStderrLine || !strings.HasSuffix(last, "…") {
		t.Errorf("a long line is kept as %d bytes, want at most %d, marked", len(last), keptStderrLine)
	}
}
