package handlers

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"maven/app/activity"
	"maven/app/agents"
	"maven/app/allowlist"
	"maven/app/clients"
	"maven/app/mcp"
	"maven/app/notify"
	"maven/app/voice"
	"maven/internal/enum"
	"maven/views"
)

// ActivityFeed reads the activity feed, and records the owner's security events in it
// (*activity.Log).
type ActivityFeed interface {
	// Query fails with activity.ErrBadFilter for a filter that selects nothing sensible.
	Query(ctx context.Context, f activity.Filter) (activity.Page, error)
	Append(ctx context.Context, events ...activity.Event) error
}

// activityView is one view of /activity: the filters, and where the page starts.
type activityView struct {
	kind    activity.Kind // "" for every kind
	outcome string
	tool    string
	day     string    // YYYY-MM-DD, as asked for
	date    time.Time // that day in the daemon's zone; zero for every day
	before  int64     // list entries older than this id; 0 for the newest
}

// outcomeTones are the voice outcomes the filter offers, in the order a turn meets them, and
// how each is shown: "ok", "calm" or "trouble". Their words are voice.Outcome.Words.
var outcomeTones = enum.Table[voice.Outcome, string]{
	{Member: voice.OutcomeRan, Said: "ok"},
	{Member: voice.OutcomeConfirm, Said: "calm"},
	{Member: voice.OutcomeAsk, Said: "calm"},
	{Member: voice.OutcomeCancelled, Said: "calm"},
	{Member: voice.OutcomeNeedsArgs, Said: "calm"},
	{Member: voice.OutcomeNoMatch, Said: "calm"},
	{Member: voice.OutcomeHelp, Said: "calm"},
	{Member: voice.OutcomeRefused, Said: "trouble"},
	{Member: voice.OutcomeLocked, Said: "trouble"},
	{Member: voice.OutcomeError, Said: "trouble"},
}

// agentOutcomeTones are how an agent's call's outcome is shown; their words are
// agents.Outcome.Words.
var agentOutcomeTones = enum.Table[agents.Outcome, string]{
	{Member: agents.OutcomeRan, Said: "ok"},
	{Member: agents.OutcomeNeedsOwner, Said: "calm"},
	{Member: agents.OutcomeBadArguments, Said: "calm"},
	{Member: agents.OutcomeOutsideLimits, Said: "calm"},
	{Member: agents.OutcomeChanged, Said: "calm"},
	{Member: agents.OutcomeLocked, Said: "trouble"},
	{Member: agents.OutcomeFailed, Said: "trouble"},
}

// activityViewFrom reads a view from a query string. A filter that cannot be read is left out,
// and problem says which and why.
func activityViewFrom(q url.Values) (v activityView, problem string) {
	var problems []string
	v.tool = strings.TrimSpace(q.Get("tool"))
	if len(v.tool) > maxQueryLen {
		v.tool = v.tool[:maxQueryLen]
	}
	if k := activity.Kind(q.Get("kind")); slices.Contains(activity.Kinds(), k) {
		v.kind = k
	} else if k != "" {
		problems = append(problems, "there is no kind of entry “"+string(k)+"”")
	}
	if o := q.Get("outcome"); o != "" {
		if _, ok := outcomeTones.Of(voice.Outcome(o)); ok {
			v.outcome = o
		} else {
			problems = append(problems, "there is no outcome “"+o+"”")
		}
	}
	if d := strings.TrimSpace(q.Get("day")); d != "" {
		t, err := time.ParseInLocation(time.DateOnly, d, time.Local)
		if err != nil {
			problems = append(problems, "the day must be a date such as 2026-12-14")
		} else {
			v.day, v.date = d, t
		}
	}
	if b := q.Get("before"); b != "" {
		n, err := strconv.ParseInt(b, 10, 64)
		if err != nil || n <= 0 {
			problems = append(problems, "the page to start from is not one Maven offered")
		} else {
			v.before = n
		}
	}
	if len(problems) > 0 {
		problem = "Shown without that filter: " + strings.Join(problems, "; ") + "."
	}
	return v, problem
}

// url is the address of the view starting before id (0: the newest entries).
func (v activityView) url(before int64) string {
	q := url.Values{}
	if v.kind != "" {
		q.Set("kind", string(v.kind))
	}
	if v.outcome != "" {
		q.Set("outcome", v.outcome)
	}
	if v.tool != "" {
		q.Set("tool", v.tool)
	}
	if v.day != "" {
		q.Set("day", v.day)
	}
	if before > 0 {
		q.Set("before", strconv.FormatInt(before, 10))
	}
	if len(q) == 0 {
		return "/activity"
	}
	return "/activity?" + q.Encode()
}

func (v activityView) filter() activity.Filter {
	f := activity.Filter{Kind: v.kind, Outcome: v.outcome, Tool: v.tool, Before: v.before}
	if !v.date.IsZero() {
		f = f.Day(v.date)
	}
	return f
}

// activityPage is GET /activity: one page of the activity feed, newest first, with its filters
// (kind, outcome, tool, day) as a GET form. The form and the Older link swap only the list
// (htmx), and work as a plain form and plain links without it. The tools one discovery
// proposed are one line.
func (s *server) activityPage(w http.ResponseWriter, r *http.Request) error {
	view, problem := activityViewFrom(r.URL.Query())
	page, err := s.activityPageOf(r.Context(), view.filter())
	if err != nil {
		return err
	}
	list := views.ActivityList{Problem: problem, Empty: "Nothing has happened yet."}
	if view.kind != "" || view.outcome != "" || view.tool != "" || view.day != "" {
		list.Empty = "Nothing matches these filters."
	}
	for _, run := range discoveries(page.Entries) {
		if len(run) == 1 {
			list.Entries = append(list.Entries, entryView(run[0]))
			continue
		}
		list.Entries = append(list.Entries, s.discoveryView(r.Context(), run))
	}
	if page.Next != 0 {
		list.OlderURL = view.url(page.Next)
	}
	if view.before != 0 {
		list.NewestURL = view.url(0)
	}
	status := http.StatusOK
	if problem != "" {
		status = http.StatusUnprocessableEntity
	}
	if isPartial(r) {
		s.renderPartial(w, r, status, views.PartialActivityList, list)
		return nil
	}
	filters, err := s.activityFilters(r, view)
	if err != nil {
		return err
	}
	s.renderPage(w, r, status, views.PageActivity, views.ActivityPage{
		Page: s.pageInfo(r, "Activity", "activity"), Filters: filters, List: list,
	})
	return nil
}

// activityPageOf is one page of the feed for f that never ends inside a discovery: the line
// that stands for a discovery counts every tool it proposed.
func (s *server) activityPageOf(ctx context.Context, f activity.Filter) (activity.Page, error) {
	page, err := s.activity.Query(ctx, f)
	if err != nil || page.Next == 0 || !proposedByDiscovery(page.Entries[len(page.Entries)-1]) {
		return page, err
	}
	last := page.Entries[len(page.Entries)-1]
	for page.Next != 0 {
		f.Before, f.Limit = page.Next, activity.MaxLimit
		more, err := s.activity.Query(ctx, f)
		if err != nil {
			return activity.Page{}, err
		}
		i := slices.IndexFunc(more.Entries, func(e activity.Entry) bool { return !sameDiscovery(e, last) })
		if i < 0 {
			page.Entries, page.Next = append(page.Entries, more.Entries...), more.Next
			continue
		}
		page.Entries = append(page.Entries, more.Entries[:i]...)
		if i > 0 {
			page.Next = more.Entries[i-1].ID
		}
		break
	}
	return page, nil
}

// proposedByDiscovery reports whether e is a tool a server's listing proposed.
func proposedByDiscovery(e activity.Entry) bool {
	return e.Actor == "discovery" && e.Action == "proposed"
}

// sameDiscovery reports whether a and b are tools proposed by one discovery: one listing's new
// tools are proposed in one transaction, at one instant.
func sameDiscovery(a, b activity.Entry) bool {
	return proposedByDiscovery(a) && proposedByDiscovery(b) && a.At.Equal(b.At)
}

// discoveries splits entries into runs: the tools one discovery proposed together, and every
// other entry alone.
func discoveries(entries []activity.Entry) [][]activity.Entry {
	var runs [][]activity.Entry
	for _, e := range entries {
		if n := len(runs); n > 0 && sameDiscovery(runs[n-1][0], e) {
			runs[n-1] = append(runs[n-1], e)
			continue
		}
		runs = append(runs, []activity.Entry{e})
	}
	return runs
}

// discoveryView is the one line of the tools a discovery proposed: "tasks proposed 14 tools",
// linking to /tools showing only them.
func (s *server) discoveryView(ctx context.Context, run []activity.Entry) views.ActivityEntry {
	ids := make([]int64, len(run))
	for i, e := range run {
		ids[i] = e.ToolID
	}
	v := views.ActivityEntry{ID: run[0].ID, At: timeOf(run[0].At), Action: "proposed", Actor: "discovery",
		What: fmt.Sprintf("proposed %d tools", len(run)), ToolsURL: toolsView{ids: ids}.url(0)}
	if t, err := s.tools.Get(ctx, run[0].ToolID); err == nil && t.IsMCP() {
		v.Server = text(t.Server())
	} else if err != nil {
		s.log.Warn("activity: read a proposed tool", "tool", run[0].ToolID, "err", err)
	}
	return v
}

// maxToolNames bounds the names the tool filter offers while typing.
const maxToolNames = 500

// activityFilters is the filter form of view, offering the allowlist's names for the tool.
func (s *server) activityFilters(r *http.Request, view activityView) (views.ActivityFilters, error) {
	f := views.ActivityFilters{Tool: view.tool, Day: view.day,
		Kinds:    []views.Option{{Value: "", Label: "All", Selected: view.kind == ""}},
		Outcomes: []views.Option{{Value: "", Label: "Any", Selected: view.outcome == ""}}}
	for _, k := range activity.Kinds() {
		f.Kinds = append(f.Kinds, views.Option{Value: string(k), Label: kindLabels[k], Selected: view.kind == k})
	}
	for _, o := range outcomeTones.Members() {
		f.Outcomes = append(f.Outcomes, views.Option{Value: string(o), Label: o.Words(), Selected: view.outcome == string(o)})
	}
	rows, err := s.tools.List(r.Context(), allowlist.Filter{Limit: maxToolNames})
	if err != nil {
		return f, err
	}
	for _, t := range rows {
		f.Tools = append(f.Tools, t.Name)
	}
	slices.Sort(f.Tools)
	return f, nil
}

// kindLabels name the kinds of entry on the switch.
var kindLabels = map[activity.Kind]string{activity.KindVoice: "Voice", activity.KindAgents: "Agents",
	activity.KindChanges: "Changes", activity.KindServers: "Servers"}

// actionLabels name the feed's actions in words; any other is shown as it is recorded.
var actionLabels = map[string]string{
	activity.ActionVoiceTurn:       "Voice",
	activity.ActionAgentCall:       "Agent call",
	activity.ActionLocked:          "Locked",
	activity.ActionUnlocked:        "Unlocked",
	activity.ActionServerState:     "Server",
	"command_approved":             "Command line approved",
	"proposed":                     "Proposed",
	"reproposed":                   "Proposed again",
	"updated":                      "Updated by its server",
	"redefined":                    "Redefined by its server",
	"fingerprint_adopted":          "Fingerprint recorded",
	"enabled":                      "Enabled",
	"disabled":                     "Disabled",
	"withdrawn":                    "Withdrawn",
	"phrases_set":                  "Phrases saved",
	"limits_set":                   "Limits saved",
	activity.ActionPasskeyAdded:    "Passkey added",
	activity.ActionPasskeyRenamed:  "Passkey renamed",
	activity.ActionPasskeyRemoved:  "Passkey removed",
	activity.ActionSecretSet:       "Secret set",
	activity.ActionSecretDeleted:   "Secret deleted",
	activity.ActionRecoveryRotated: "New recovery code",
	activity.ActionSetupLinkIssued: "Setup link issued",
	clients.ActionAdded:            "Client token issued",
	clients.ActionConsented:        "Client allowed",
	clients.ActionDenied:           "Client denied",
	clients.ActionToolsSet:         "Client's tools changed",
	clients.ActionRevoked:          "Client revoked",
	clients.ActionTokenReused:      "Client's token reused: its tokens revoked",
	// docs/design.md#rule-30: each delivery of a notification, and the browsers subscribed.
	activity.ActionNotified:         "Notified",
	activity.ActionNotifyFailed:     "Not notified",
	activity.ActionPushSubscribed:   "Notifications turned on",
	activity.ActionPushUnsubscribed: "Notifications turned off",
}

// entryView is the view of one event: its action and outcome in words, a voice turn's words
// and bound arguments, and the rest of what it records, everything from outside Maven with its
// hidden characters spelled out (docs/design.md#rule-25).
func entryView(e activity.Entry) views.ActivityEntry {
	v := views.ActivityEntry{ID: e.ID, At: timeOf(e.At), Action: e.Action, Actor: e.Actor, Tool: e.Tool, Outcome: e.Outcome}
	v.What = actionLabels[e.Action]
	if v.What == "" {
		v.What = e.Action
	}
	if e.Tool != "" {
		v.ToolText, v.ToolURL = text(e.Tool), activityView{tool: e.Tool}.url(0)
	}
	switch {
	case e.Action == activity.ActionAgentCall:
		v.OutcomeLabel = agents.Outcome(e.Outcome).Words()
		v.Tone, _ = agentOutcomeTones.Of(agents.Outcome(e.Outcome))
	case e.Outcome != "":
		v.OutcomeLabel = voice.Outcome(e.Outcome).Words()
		v.Tone, _ = outcomeTones.Of(voice.Outcome(e.Outcome))
	}
	var detail map[string]any
	if json.Unmarshal(e.Detail, &detail) != nil {
		// Not an object: shown as it is.
		v.Facts = []views.Fact{{Label: text("Detail"), Value: text(string(e.Detail)), Code: true}}
		return v
	}
	if u, ok := detail["utterance"].(string); ok {
		v.Utterance = text(u)
	}
	if said, ok := detail["reply"].(string); ok {
		v.Reply = text(said)
	}
	if args, ok := detail["args"].(map[string]any); ok {
		for _, name := range slices.Sorted(maps.Keys(args)) {
			v.Args = append(v.Args, views.Fact{Label: text(name), Value: text(valueText(args[name])), Code: true})
		}
	}
	switch e.Action {
	case activity.ActionServerState:
		v.Tone = serverTone(mcp.State(fmt.Sprint(detail["to"])))
	case activity.ActionNotifyFailed:
		v.Tone = "trouble"
	}
	v.Facts = facts(detail)
	return v
}

// factKeys are the detail keys shown, in this order, with their labels; "from" and "to" are
// one fact. Keys not here are left out: they repeat what the entry shows (utterance, args) or
// are for machines (fingerprints, a previous declared shape, digests).
var factKeys = []struct{ key, label string }{
	{"client", "Client"},
	{"server", "Server"},
	{"client", "Client"},
	{"kind", "Signs in with"},
	{"redirect_uri", "Answer went to"},
	{"tools", "Tools"},
	{"notifier", "Through"},
	{"target", "To"},
	{"secret", "Secret"},
	{"passkey_name", "Passkey"},
	{"via", "Added through"},
	{"expires", "Valid until"},
	{"from", "State"},
	{"error", "Error"},
	{"reason", "Why"},
	{"command", "Command line"},
	{"phrases", "Phrases"},
	{"limits", "Limits"},
	{"changed", "Changed"},
	{"destructive_raised", "Destructive"},
	{"old_name", "Renamed from"},
	{"rename_of", "Possibly a rename of"},
	{"provenance", "Provenance"},
	{"conversation", "Conversation"},
	{"user_id", "Voice user"},
}

// facts lists what an event's detail records, by factKeys.
func facts(detail map[string]any) []views.Fact {
	var out []views.Fact
	for _, k := range factKeys {
		val, ok := detail[k.key]
		if k.key == "from" {
			// A first state has no "from": the fact is the "to".
			_, ok = detail["to"]
		}
		if !ok || val == "" && k.key != "from" || val == false {
			continue
		}
		f := views.Fact{Label: text(k.label)}
		switch k.key {
		case "from":
			from, _ := val.(string)
			f.Value = text(fmt.Sprintf("%s → %s", orNone(from), valueText(detail["to"])))
		case "destructive_raised":
			f.Value = text("raised: it no longer claims to be read-only")
		case "phrases":
			f.Value, f.Code = text(lines(val)), true
			if len(f.Value) == 0 {
				f.Value, f.Code = text("none (cleared)"), false
			}
		case "limits":
			f.Value = text(limitsFact(val))
		case "command":
			f.Value, f.Code = text(valueText(val)), true
		case "notifier":
			f.Value = text(notify.Notifier(valueText(val)).Words())
		case "expires":
			t, err := time.Parse(time.RFC3339, valueText(val))
			if err != nil {
				f.Value = text(valueText(val))
				break
			}
			f.Value = text(timeOf(t).Text)
		default:
			f.Value = text(valueText(val))
		}
		out = append(out, f)
	}
	return out
}

// valueText writes a detail's value for reading: a string as it is, a list as a comma list,
// anything else as JSON.
func valueText(v any) string {
	switch x := v.(type) {
	case string:
		return x
	case []any:
		parts := make([]string, len(x))
		for i, p := range x {
			parts[i] = valueText(p)
		}
		return strings.Join(parts, ", ")
	}
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprint(v)
	}
	return string(b)
}

// lines writes a list one item a line.
func lines(v any) string {
	list, ok := v.([]any)
	if !ok {
		return valueText(v)
	}
	parts := make([]string, len(list))
	for i, p := range list {
		parts[i] = valueText(p)
	}
	return strings.Join(parts, "\n")
}

func orNone(s string) string {
	if s == "" {
		return "none"
	}
	return s
}
