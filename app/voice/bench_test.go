package voice_test

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"maven/app/allowlist"
	"maven/app/mcp/mcptest"
	"maven/app/runner"
	"maven/app/voice"
)

// BenchmarkVoiceTurnVsDirectCall measures, side by side in one run, a voice turn to a read-only
// tool on a loopback streamable-HTTP server (match, bind, audit event, call through the MCP
// manager) against a direct go-sdk CallTool on the same server. Each iteration does one of each,
// so both see the same machine load; the metrics are the medians, p99s and the median ratio
// (target: at most 1.3).
func BenchmarkVoiceTurnVsDirectCall(b *testing.B) {
	ctx := context.Background()
	live := newLiveTool(b, "tasks", mcptest.ToolSpec{Name: "search_tasks", Description: "Searches tasks",
		InputSchema: json.RawMessage(stringSchema), ReadOnly: true, Echo: true}, "search_tasks")
	rows, manager := live.rows, live.manager
	logger := slog.New(slog.DiscardHandler)
	turns := voice.New(voice.Deps{Rows: rows, Binder: manager, Runner: runner.New(rows, manager, runner.Options{}), Lock: &lockFlag{}},
		voice.Options{Logger: logger, TurnsPerSecond: 1e9, Burst: 1e9})
	defer turns.CancelPending()

	client := sdk.NewClient(&sdk.Implementation{Name: "bench", Version: "0"}, nil)
	direct, err := client.Connect(ctx, &sdk.StreamableClientTransport{Endpoint: live.url}, nil)
	if err != nil {
		b.Fatal(err)
	}
	defer direct.Close()

	// Warm both paths (connections, matcher, prepared statements).
	for range 20 {
		if r := turns.Turn(ctx, voice.Request{Conversation: "bench", Text: "search tasks milk"}); r.Outcome != voice.OutcomeRan {
			b.Fatalf("voice turn: %+v", r)
		}
		if _, err := direct.CallTool(ctx, &sdk.CallToolParams{Name: "search_tasks", Arguments: map[string]any{"query": "milk"}}); err != nil {
			b.Fatal(err)
		}
	}

	var voiceTimes, directTimes []time.Duration
	b.ResetTimer()
	for b.Loop() {
		start := time.Now()
		r := turns.Turn(ctx, voice.Request{Conversation: "bench", Text: "search tasks milk"})
		voiceTimes = append(voiceTimes, time.Since(start))
		if r.Outcome != voice.OutcomeRan {
			b.Fatalf("voice turn: %+v", r)
		}
		start = time.Now()
		if _, err := direct.CallTool(ctx, &sdk.CallToolParams{Name: "search_tasks", Arguments: map[string]any{"query": "milk"}}); err != nil {
			b.Fatal(err)
		}
		directTimes = append(directTimes, time.Since(start))
	}
	b.StopTimer()
	vm, dm := quantile(voiceTimes, 0.5), quantile(directTimes, 0.5)
	b.ReportMetric(float64(vm.Microseconds()), "voice-median-µs")
	b.ReportMetric(float64(quantile(voiceTimes, 0.99).Microseconds()), "voice-p99-µs")
	b.ReportMetric(float64(dm.Microseconds()), "direct-median-µs")
	b.ReportMetric(float64(quantile(directTimes, 0.99).Microseconds()), "direct-p99-µs")
	b.ReportMetric(float64(vm)/float64(dm), "median-ratio")
}

func quantile(d []time.Duration, q float64) time.Duration {
	s := slices.Clone(d)
	slices.Sort(s)
	return s[int(q*float64(len(s)-1))]
}

// BenchmarkFillerWords times a turn of n filler words ("um um … search tasks milk") against one
// of 4n, side by side in each iteration, and reports the ratio of their medians: about 16 would
// mean the turn's work grows with the square of the words, 4 with the words, 1 with neither
// (docs/design.md#rule-17 bounds the words a turn considers).
func BenchmarkFillerWords(b *testing.B) {
	const n = 4000
	w := newWorld(b)
	utterance := func(words int) string { return strings.Repeat("um ", words) + "search tasks milk" }
	short, long := utterance(n), utterance(4*n)
	var shortTimes, longTimes []time.Duration
	for b.Loop() {
		start := time.Now()
		w.turn(short)
		shortTimes = append(shortTimes, time.Since(start))
		start = time.Now()
		w.turn(long)
		longTimes = append(longTimes, time.Since(start))
	}
	b.StopTimer()
	sm, lm := quantile(shortTimes, 0.5), quantile(longTimes, 0.5)
	b.ReportMetric(float64(sm.Microseconds()), "n-median-µs")
	b.ReportMetric(float64(lm.Microseconds()), "4n-median-µs")
	b.ReportMetric(float64(lm)/float64(sm), "4n/n-ratio")
}

// BenchmarkTurnLayers times, interleaved in one loop, the same call four ways, each through one
// layer more: a direct go-sdk CallTool, the MCP manager's CallTool, the runner's Exec and a whole
// voice turn; it reports each one's median, so that what each layer adds can be read off
// (bench/README.md). A fifth, a turn whose run is answered at once (instantRunner), is the turn's
// own work timed between the calls, which BenchmarkTurnAlone times back to back.
func BenchmarkTurnLayers(b *testing.B) {
	ctx := context.Background()
	live := newLiveTool(b, "tasks", mcptest.ToolSpec{Name: "search_tasks", Description: "Searches tasks",
		InputSchema: json.RawMessage(stringSchema), ReadOnly: true, Echo: true}, "search_tasks")
	run := runner.New(live.rows, live.manager, runner.Options{})
	turns := voice.New(voice.Deps{Rows: live.rows, Binder: live.manager, Runner: run, Lock: &lockFlag{}},
		voice.Options{Logger: slog.New(slog.DiscardHandler), TurnsPerSecond: 1e9, Burst: 1e9})
	defer turns.CancelPending()
	alone := voice.New(voice.Deps{Rows: live.rows, Binder: live.manager, Runner: instantRunner{}, Lock: &lockFlag{}},
		voice.Options{Logger: slog.New(slog.DiscardHandler), TurnsPerSecond: 1e9, Burst: 1e9})
	client := sdk.NewClient(&sdk.Implementation{Name: "bench", Version: "0"}, nil)
	direct, err := client.Connect(ctx, &sdk.StreamableClientTransport{Endpoint: live.url}, nil)
	if err != nil {
		b.Fatal(err)
	}
	defer direct.Close()
	args := map[string]any{"query": "milk"}
	layers := []struct {
		name string
		call func() error
	}{
		{"direct", func() error {
			_, err := direct.CallTool(ctx, &sdk.CallToolParams{Name: "search_tasks", Arguments: args})
			return err
		}},
		{"manager", func() error { _, err := live.manager.CallTool(ctx, "tasks", "search_tasks", args); return err }},
		{"runner", func() error { _, err := run.Exec(ctx, live.row, args); return err }},
		{"turn", func() error {
			if r := turns.Turn(ctx, voice.Request{Conversation: "bench", Text: "search tasks milk"}); r.Outcome != voice.OutcomeRan {
				return fmt.Errorf("voice turn: %+v", r)
			}
			return nil
		}},
		{"turn-alone", func() error {
			if r := alone.Turn(ctx, voice.Request{Conversation: "alone", Text: "search tasks milk"}); r.Outcome != voice.OutcomeRan {
				return fmt.Errorf("voice turn, its run answered at once: %+v", r)
			}
			return nil
		}},
	}
	times := make([][]time.Duration, len(layers))
	for i := 0; b.Loop(); i++ {
		for j := range layers {
			k := (i + j) % len(layers) // each layer goes first in turn
			start := time.Now()
			if err := layers[k].call(); err != nil {
				b.Fatal(err)
			}
			times[k] = append(times[k], time.Since(start))
		}
	}
	for k, l := range layers {
		b.ReportMetric(float64(quantile(times[k], 0.5).Microseconds()), l.name+"-median-µs")
	}
}

// instantRunner answers every run at once with the JSON a search returns, so that a turn's own
// work is all that is timed.
type instantRunner struct{}

func (instantRunner) Exec(context.Context, allowlist.Tool, map[string]any) (runner.Result, error) {
	return runner.Result{Output: `{"query":"milk"}`}, nil
}

// BenchmarkTurnAlone is a turn's own work (hearing, matching, binding, recording, the goroutine
// its call runs on and the reply), its run answered at once.
func BenchmarkTurnAlone(b *testing.B) {
	ctx := context.Background()
	live := newLiveTool(b, "tasks", mcptest.ToolSpec{Name: "search_tasks", Description: "Searches tasks",
		InputSchema: json.RawMessage(stringSchema), ReadOnly: true, Echo: true}, "search_tasks")
	turns := voice.New(voice.Deps{Rows: live.rows, Binder: live.manager, Runner: instantRunner{}, Lock: &lockFlag{}},
		voice.Options{Logger: slog.New(slog.DiscardHandler), TurnsPerSecond: 1e9, Burst: 1e9})
	defer turns.CancelPending()
	for b.Loop() {
		if r := turns.Turn(ctx, voice.Request{Conversation: "bench", Text: "search tasks milk"}); r.Outcome != voice.OutcomeRan {
			b.Fatalf("voice turn: %+v", r)
		}
	}
}
