package handlers

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"maven/app/activity"
	"maven/app/allowlist"
	"maven/app/voice"
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
	activity.KindApprovals: "Approvals", activity.KindChanges: "Changes", activity.KindServers: "Servers"}
