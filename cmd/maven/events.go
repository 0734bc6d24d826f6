package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"maven/app/activity"
	"maven/app/ipc"
	"maven/app/reveal"
	"maven/app/voice"
	"maven/internal/suggest"
)

// eventsParams are the `events` IPC params; every field is optional.
type eventsParams struct {
	Since   time.Time `json:"since"`
	Until   time.Time `json:"until"`
	Limit   int       `json:"limit"`
	Before  int64     `json:"before"` // continue below this id
	Outcome string    `json:"outcome"`
	Tool    string    `json:"tool"`
	Action  string    `json:"action"`
}

// ipcEvents is the read-only `events` method: one page of the activity feed, newest first.
func (d *daemon) ipcEvents(ctx context.Context, params json.RawMessage) (any, error) {
	var p eventsParams
	if err := ipc.DecodeParams(params, &p); err != nil {
		return nil, err
	}
	if p.Outcome != "" && !knownOutcome(p.Outcome) {
		return nil, &ipc.Error{Code: ipc.InvalidParams, Message: fmt.Sprintf("outcome is one of %s, not %q%s",
			strings.Join(outcomeNames(), ", "), p.Outcome, didYouMean(p.Outcome, outcomeNames()))}
	}
	page, err := d.events.Query(ctx, activity.Filter{Since: p.Since, Until: p.Until, Limit: p.Limit,
		Before: p.Before, Outcome: p.Outcome, Tool: p.Tool, Action: p.Action})
	if errors.Is(err, activity.ErrBadFilter) {
		return nil, &ipc.Error{Code: ipc.InvalidParams, Message: err.Error()}
	}
	if err != nil {
		return nil, err
	}
	if page.Entries == nil {
		page.Entries = []activity.Entry{}
	}
	return page.Entries, nil
}

// cliEvents is `maven events [--json] [--since DURATION] [--limit N] [--outcome O] [--tool T]`.
func cliEvents(ctx context.Context, in *invocation, args []string) error {
	fs, f := in.newClientFlags("events", true)
	var since sinceFlag
	fs.Var(&since, "since", "only events of the last DURATION, such as 30m, 2h, 1d or 1w")
	limit := fs.Int("limit", activity.DefaultLimit, fmt.Sprintf("the most events shown (at most %d)", activity.MaxLimit))
	outcome := fs.String("outcome", "", "only voice turns with this outcome, such as no_match")
	tool := fs.String("tool", "", "only events of the tool with this name")
	rest, _, err := in.parseFlags(fs, args)
	if err != nil {
		return err
	}
	if f.dataDir, err = absDataDir(f.dataDir); err != nil {
		return err
	}
	switch {
	case len(rest) > 0:
		return usagef("events", "events takes no arguments")
	case *limit < 1 || *limit > activity.MaxLimit:
		return usagef("events", "--limit needs a number from 1 to %d", activity.MaxLimit)
	case *outcome != "" && !knownOutcome(*outcome):
		return usagef("events", "--outcome is one of %s, not %q%s", strings.Join(outcomeNames(), ", "), *outcome,
			didYouMean(*outcome, outcomeNames()))
	}
	stdout := in.stdout
	p := eventsParams{Limit: *limit, Outcome: *outcome, Tool: *tool}
	if since > 0 {
		p.Since = time.Now().Add(-time.Duration(since)).UTC()
	}
	var entries []activity.Entry
	if err := f.call(ctx, "events", p, &entries); err != nil {
		return err
	}
	if f.json {
		return writeJSON(stdout, entries)
	}
	// A log reads top to bottom: oldest first.
	sort.Slice(entries, func(i, j int) bool { return entries[i].ID < entries[j].ID })
	tw := tabwriter.NewWriter(stdout, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "AT\tACTOR\tACTION\tTOOL\tOUTCOME\tDETAIL")
	for _, e := range entries {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", e.At.Local().Format(time.DateTime), reveal.OneLine(e.Actor),
			reveal.OneLine(e.Action), orDash(reveal.OneLine(e.Tool)), orDash(e.Outcome), reveal.OneLine(eventDetail(e.Detail)))
	}
	return tw.Flush()
}

// eventDetail renders an event's detail on one line: a voice turn's words first, then the
// other fields as key=value, cut to a terminal's width.
func eventDetail(raw json.RawMessage) string {
	var m map[string]any
	if json.Unmarshal(raw, &m) != nil {
		return string(raw)
	}
	var parts []string
	if u, ok := m["utterance"].(string); ok {
		parts = append(parts, fmt.Sprintf("%q", u))
		delete(m, "utterance")
	}
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		v, err := json.Marshal(m[k])
		if err != nil {
			continue
		}
		parts = append(parts, k+"="+strings.Trim(string(v), `"`))
	}
	s := strings.Join(parts, " ")
	if r := []rune(s); len(r) > 100 {
		s = string(r[:99]) + "…"
	}
	return s
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// outcomeNames are the voice outcomes --outcome may name.
func outcomeNames() []string {
	var out []string
	for _, o := range voice.Outcomes() {
		out = append(out, string(o))
	}
	return out
}

func knownOutcome(o string) bool { return slices.Contains(outcomeNames(), o) }

// didYouMean is " (did you mean X?)" for the candidate s was most likely meant to be, or "".
func didYouMean(s string, candidates []string) string {
	if c := suggest.Closest(s, candidates); c != "" {
		return fmt.Sprintf(" (did you mean %s?)", c)
	}
	return ""
}

// sinceFlag is a duration back from now: time.ParseDuration's units, and days (d) and weeks (w)
// before them, such as 1w, 3d or 1d12h.
type sinceFlag time.Duration

func (f *sinceFlag) String() string { return time.Duration(*f).String() }

func (f *sinceFlag) Set(s string) error {
	d, err := parseSince(s)
	if err != nil {
		return err
	}
	*f = sinceFlag(d)
	return nil
}

// parseSince reads a positive duration that may begin with weeks and days.
func parseSince(s string) (time.Duration, error) {
	bad := fmt.Errorf("%q is not a duration such as 30m, 2h, 1d or 1w", s)
	var d time.Duration
	rest := s
	for _, unit := range []struct {
		suffix string
		length time.Duration
	}{{"w", 7 * 24 * time.Hour}, {"d", 24 * time.Hour}} {
		i := strings.Index(rest, unit.suffix)
		if i < 0 {
			continue
		}
		n, err := strconv.Atoi(rest[:i])
		if err != nil || n < 0 || n > 1000 {
			return 0, bad
		}
		d += time.Duration(n) * unit.length
		rest = rest[i+1:]
	}
	if rest != "" {
		more, err := time.ParseDuration(rest)
		if err != nil {
			return 0, bad
		}
		d += more
	}
	if d <= 0 {
		return 0, fmt.Errorf("%q: --since needs a positive duration", s)
	}
	return d, nil
}
