package mcp

import (
	"context"
	"encoding/json"
	"strings"
	"sync"
	"testing"
	"time"

	"maven/app/config"
	"maven/app/mcp/mcptest"
)

// askColour is a tool that asks the client for one string before it answers with the reply.
var askColour = mcptest.ToolSpec{Name: "paint", Description: "Paints.", Elicit: json.RawMessage(`{"message":"Which colour?",
	"requestedSchema":{"type":"object","properties":{"colour":{"type":"string"}},"required":["colour"]}}`)}

// fakeElicitor answers every question with answer, after delay, and records what it was asked.
type fakeElicitor struct {
	delay  time.Duration
	answer ElicitAnswer
	mu     sync.Mutex
	asked  []Elicitation
}

func (f *fakeElicitor) Elicit(ctx context.Context, e Elicitation) (ElicitAnswer, error) {
	f.mu.Lock()
	f.asked = append(f.asked, e)
	f.mu.Unlock()
	t := time.NewTimer(f.delay)
	defer t.Stop()
	select {
	case <-t.C:
		return f.answer, nil
	case <-ctx.Done():
		return ElicitAnswer{}, ctx.Err()
	}
}

func (f *fakeElicitor) questions() []Elicitation {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]Elicitation(nil), f.asked...)
}

// eras are the four ways a server meets Maven: each protocol era over HTTP and stdio.
var eras = []struct {
	name      string
	transport config.Transport
	protocols []string
}{
	{"2025 http", config.TransportHTTP, mcptest.Legacy},
	{"2025 stdio", config.TransportStdio, mcptest.Legacy},
	{"2026 http", config.TransportHTTP, mcptest.Modern},
	{"2026 stdio", config.TransportStdio, mcptest.Modern},
}

// A server's question during a call reaches the elicitor the call was made with, in either era
// (a 2025 elicitation/create, a 2026 input_required result), and its answer goes back to that
// call. The call's timeout does not run while the owner is asked: the answer here takes twice
// as long as the whole call may.
func TestElicitationReachesTheCallsElicitor(t *testing.T) {
	for _, era := range eras {
		t.Run(era.name, func(t *testing.T) {
			srv := newEraServer(t, era.transport, mcptest.Options{Protocols: era.protocols}, askColour)
			rec := newFakeReconciler()
			opts := fastOptions()
			opts.CallTimeout = 500 * time.Millisecond
			m := startManager(t, map[string]config.Server{"studio": srv.cfg}, rec, opts)
			waitNames(t, rec, "studio", "paint")

			owner := &fakeElicitor{delay: time.Second, answer: ElicitAnswer{Action: ActionAccept, Content: map[string]any{"colour": "blue"}}}
			res, err := m.CallTool(WithElicitor(context.Background(), owner), "studio", "paint", nil)
			if err != nil || res.IsError || res.Output != `{"action":"accept","content":{"colour":"blue"}}` {
				t.Fatalf("CallTool = %+v, %v; want the server to have the owner's answer", res, err)
			}
			asked := owner.questions()
			if len(asked) != 1 {
				t.Fatalf("asked %d questions, want 1", len(asked))
			}
			q := asked[0]
			if q.Server != "studio" || q.Tool != "paint" || q.Mode != "form" || q.Message != "Which colour?" || !strings.Contains(string(q.Schema), `"colour"`) {
				t.Errorf("the question = %+v", q)
			}
		})
	}
}

// A question outside a voice turn, here a call made without an elicitor, is declined at once,
// in either era, and the call goes on to the server's answer.
func TestElicitationOutsideAVoiceTurnIsDeclined(t *testing.T) {
	for _, era := range eras {
		t.Run(era.name, func(t *testing.T) {
			srv := newEraServer(t, era.transport, mcptest.Options{Protocols: era.protocols}, askColour)
			rec := newFakeReconciler()
			m := startManager(t, map[string]config.Server{"studio": srv.cfg}, rec, fastOptions())
			waitNames(t, rec, "studio", "paint")
			res, err := m.CallTool(context.Background(), "studio", "paint", nil)
			if err != nil || res.Output != `{"action":"decline"}` {
				t.Errorf("CallTool = %+v, %v; want the question declined", res, err)
			}
		})
	}
}

// A 2025-era question names no call: with two calls in progress on the server, Maven cannot
// tell whose it is, and declines it rather than put it to the wrong turn.
func TestElicitationWithSeveralCallsInProgressIsDeclined(t *testing.T) {
	slow := mcptest.ToolSpec{Name: "slow", Text: "done", DelayMS: 2000}
	srv := newEraServer(t, config.TransportStdio, mcptest.Options{Protocols: mcptest.Legacy}, askColour, slow)
	rec := newFakeReconciler()
	m := startManager(t, map[string]config.Server{"studio": srv.cfg}, rec, fastOptions())
	waitNames(t, rec, "studio", "paint", "slow")

	slowDone := make(chan error, 1)
	go func() {
		_, err := m.CallTool(context.Background(), "studio", "slow", nil)
		slowDone <- err
	}()
	s := m.servers.Load().byName["studio"]
	waitFor(t, 5*time.Second, "the slow call in progress", func() bool {
		s.mu.Lock()
		defer s.mu.Unlock()
		return len(s.calls) == 1
	})
	owner := &fakeElicitor{answer: ElicitAnswer{Action: ActionAccept, Content: map[string]any{"colour": "red"}}}
	res, err := m.CallTool(WithElicitor(context.Background(), owner), "studio", "paint", nil)
	if err != nil || res.Output != `{"action":"decline"}` {
		t.Errorf("CallTool = %+v, %v; want the question declined", res, err)
	}
	if n := len(owner.questions()); n != 0 {
		t.Errorf("the owner was asked %d questions", n)
	}
	if err := <-slowDone; err != nil {
		t.Errorf("the slow call: %v", err)
	}
}

// A 2025-era server may ask while Maven lists its tools: no voice turn is in progress, so the
// question is declined and logged, and the list is reconciled all the same.
func TestElicitationDuringARefreshIsDeclined(t *testing.T) {
	scripted := mcptest.New(mcptest.Options{Protocols: mcptest.Legacy, ElicitOnList: askColour.Elicit}, echoTool)
	srv := newRestartable(t, scripted.HTTPHandler())
	rec := newFakeReconciler()
	startManager(t, map[string]config.Server{"asker": {Type: config.TransportHTTP, URL: srv.url("/mcp")}}, rec, fastOptions())
	waitNames(t, rec, "asker", "echo")
	if got := scripted.ListAnswers(); len(got) == 0 || got[0] != ActionDecline {
		t.Errorf("the server's question during tools/list got %q, want it declined", got)
	}
}
