package mcp

import (
	"errors"
	"io"
	"strings"
	"testing"
	"time"

	"maven/app/config"
	"maven/app/mcp/mcptest"
)

func TestLimitedBody(t *testing.T) {
	for _, c := range []struct {
		size    int
		wantErr bool
	}{
		{0, false}, {9, false}, {10, false}, {11, true}, {1000, true},
	} {
		b := &limitedBody{ReadCloser: io.NopCloser(strings.NewReader(strings.Repeat("x", c.size))), left: 10}
		got, err := io.ReadAll(b)
		if gotErr := errors.Is(err, errResponseTooLarge); gotErr != c.wantErr {
			t.Errorf("a body of %d bytes under a limit of 10: %v", c.size, err)
		}
		if !c.wantErr && len(got) != c.size {
			t.Errorf("a body of %d bytes read as %d", c.size, len(got))
		}
		if len(got) > 11 {
			t.Errorf("read %d bytes past a limit of 10", len(got))
		}
	}
}

func TestErrTextIsCutAfterMasking(t *testing.T) {
	m := NewManager(map[string]config.Server{"s": {Type: config.TransportHTTP, URL: "http://127.0.0.1:1/mcp"}},
		newFakeReconciler(), fastOptions(), nil)
	s := m.servers.Load().byName["s"]
	s.secretVals = [][]byte{[]byte("hunter2-hunter2")}
	// The secret straddles the cut: masked first, none of it survives.
	msg := s.errText(errors.New(strings.Repeat("a", maxErrorText-5) + "hunter2-hunter2" + strings.Repeat("b", 1<<20)))
	if strings.Contains(msg, "hunt") || !strings.Contains(msg, "***") {
		t.Errorf("the secret shows: %q", msg[maxErrorText-20:])
	}
	if len(msg) > maxErrorText+len(" [cut]") || !strings.HasSuffix(msg, " [cut]") {
		t.Errorf("an error of 1 MiB became %d bytes ending %q", len(msg), msg[len(msg)-20:])
	}
	if short := s.errText(errors.New("short")); short != "short" {
		t.Errorf("a short error became %q", short)
	}
}

// TestRefreshGapDelaysButNeverDrops: a list_changed that comes within RefreshGap of the last
// refresh is served once the gap has passed, not dropped and not served early.
func TestRefreshGapDelaysButNeverDrops(t *testing.T) {
	scripted := mcptest.NewScripted(echoTool)
	srv := newRestartable(t, scripted.HTTPHandler())
	rec := newFakeReconciler()
	opts := fastOptions()
	opts.RefreshGap = 400 * time.Millisecond
	startManager(t, map[string]config.Server{"s": {Type: config.TransportHTTP, URL: srv.url("/mcp")}}, rec, opts)
	waitNames(t, rec, "s", "echo")
	first := time.Now()

	scripted.Add(fixedTool) // announced at once; served no sooner than the gap after the first list
	waitNames(t, rec, "s", "echo", "list_tasks")
	if d := time.Since(first); d < opts.RefreshGap-50*time.Millisecond {
		t.Errorf("a list_changed %s after a refresh was served before the gap of %s", d, opts.RefreshGap)
	}
	n := rec.count("s")
	scripted.Remove("list_tasks")
	scripted.Add(errorTool)
	waitNames(t, rec, "s", "echo", "delete_task")
	if got := rec.count("s") - n; got > 2 {
		t.Errorf("two quick changes took %d refreshes", got)
	}
}
