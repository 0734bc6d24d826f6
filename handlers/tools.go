package handlers

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"

	"maven/app/allowlist"
	"maven/app/auth"
	"maven/app/mcp"
	"maven/app/reveal"
	"maven/views"
)

// Tools is what the handlers need of the allowlist (*allowlist.Service).
type Tools interface {
	// Get returns allowlist.ErrNotFound if no row has that id.
	Get(ctx context.Context, id int64) (allowlist.Tool, error)
	List(ctx context.Context, filter allowlist.Filter) ([]allowlist.Tool, error)
	CountByState(ctx context.Context, filter allowlist.Filter) (map[allowlist.State]int, error)
	// EnableTool fails with a *allowlist.ShapeChangedError when the row is no longer the shape
	// the proof says the owner was shown.
	EnableTool(ctx context.Context, id int64, proof auth.StepUp) (allowlist.Tool, error)
	// EnableTools enables every row the proof names, as shown, in one transaction; a row that
	// changed since is refused for itself alone (its Outcome says why).
	EnableTools(ctx context.Context, proof auth.StepUp) ([]allowlist.Outcome, error)
	// DeclaredWhen returns the declared shape a row had under an earlier fingerprint ("" when
	// its audit trail does not say).
	DeclaredWhen(ctx context.Context, id int64, fingerprint string) (string, error)
	DisableTool(ctx context.Context, id int64, actor string) (allowlist.Tool, error)
	// SetConfirm needs a step-up for auth.ActionSetConfirm naming allowlist.ConfirmDigest of
	// the row as it is now; a *allowlist.ShapeChangedError for a row redefined since.
	SetConfirm(ctx context.Context, id int64, c allowlist.Confirm, proof auth.StepUp) (allowlist.Tool, error)
}

// toolsPerPage keeps a page light however long the allowlist grows.
const toolsPerPage = 50

// maxQueryLen bounds the search text.
const maxQueryLen = 200

func stateLabel(st allowlist.State) string {
	switch st {
	case allowlist.StateProposed:
		return "Proposed"
	case allowlist.StateEnabled:
		return "Enabled"
	case allowlist.StateDisabled:
		return "Disabled"
	case allowlist.StateWithdrawn:
		return "Withdrawn"
	}
	return string(st)
}

// toolsView is what one view of /tools shows: the search text, the state filter, the rows
// chosen by id (the tools of one discovery, which /activity links to) and the page.
type toolsView struct {
	q     string
	state allowlist.State // "" for every state
	ids   []int64         // nil for every row
	page  int
}

// maxChosen bounds the ids a view of /tools names.
const maxChosen = 1000

// viewFrom reads a view from a query string; an unknown state shows every state, and ids that
// do not read as ids ("3,5-9") choose none.
func viewFrom(v url.Values) toolsView {
	q := strings.TrimSpace(v.Get("q"))
	if len(q) > maxQueryLen {
		q = q[:maxQueryLen]
	}
	view := toolsView{q: q, ids: parseIDs(v.Get("ids"))}
	if st := allowlist.State(v.Get("state")); slices.Contains(allowlist.States(), st) {
		view.state = st
	}
	view.page, _ = strconv.Atoi(v.Get("page"))
	return view
}

// parseIDs reads ids written as idsParam writes them, at most maxChosen; nil for "" or for
// anything else.
func parseIDs(s string) []int64 {
	if s == "" || len(s) > 16*maxChosen {
		return nil
	}
	var ids []int64
	for part := range strings.SplitSeq(s, ",") {
		from, to, isRange := strings.Cut(part, "-")
		a, err := strconv.ParseInt(from, 10, 64)
		b := a
		if err == nil && isRange {
			b, err = strconv.ParseInt(to, 10, 64)
		}
		if err != nil || a <= 0 || b < a || b-a >= maxChosen || len(ids)+int(b-a) >= maxChosen {
			return nil
		}
		for id := a; id <= b; id++ {
			ids = append(ids, id)
		}
	}
	return ids
}

// idsParam writes ids, sorted, as a short list: runs of consecutive ids as ranges ("3,5-9").
func idsParam(ids []int64) string {
	sorted := slices.Sorted(slices.Values(ids))
	sorted = slices.Compact(sorted)
	var parts []string
	for i := 0; i < len(sorted); {
		j := i
		for j+1 < len(sorted) && sorted[j+1] == sorted[j]+1 {
			j++
		}
		part := strconv.FormatInt(sorted[i], 10)
		if j > i {
			part += "-" + strconv.FormatInt(sorted[j], 10)
		}
		parts = append(parts, part)
		i = j + 1
	}
	return strings.Join(parts, ",")
}

// viewOfPage is the view of /tools an htmx action came from (its HX-Current-URL), so that its
// answer fits the page the owner is looking at; every state when it does not say.
func viewOfPage(r *http.Request) toolsView {
	u, err := url.Parse(r.Header.Get(hxCurrentURL))
	if err != nil || u.Path != "/tools" {
		return toolsView{}
	}
	return viewFrom(u.Query())
}

// url is the address of the view at page (0: no page number).
func (v toolsView) url(page int) string {
	q := url.Values{}
	if v.q != "" {
		q.Set("q", v.q)
	}
	if v.state != "" {
		q.Set("state", string(v.state))
	}
	if v.ids != nil {
		q.Set("ids", idsParam(v.ids))
	}
	if page > 0 {
		q.Set("page", strconv.Itoa(page))
	}
	if len(q) == 0 {
		return "/tools"
	}
	return "/tools?" + q.Encode()
}

// shows reports whether a row in state st belongs in the view.
func (v toolsView) shows(st allowlist.State) bool { return v.state == "" || v.state == st }

// toolsPage is GET /tools: the whole page, or only the list when the search box, a filter or
// the pager asks (htmx).
func (s *server) toolsPage(w http.ResponseWriter, r *http.Request) error {
	list, err := s.toolList(r, viewFrom(r.URL.Query()))
	if err != nil {
		return err
	}
	if isPartial(r) {
		s.renderPartial(w, r, http.StatusOK, views.PartialToolList, list)
		return nil
	}
	servers, err := s.serversCard(r)
	if err != nil {
		return err
	}
	s.renderPage(w, r, http.StatusOK, views.PageTools, views.ToolsPage{
		Page: s.pageInfo(r, "Tools", "tools"), List: list, Servers: servers, Config: s.configNotes(),
	})
	return nil
}

// toolList builds one page of a view, its rows grouped by server, with the state filters and
// their counts.
func (s *server) toolList(r *http.Request, view toolsView) (views.ToolList, error) {
	ctx := r.Context()
	filters, counts, err := s.stateFilters(r, view)
	if err != nil {
		return views.ToolList{}, err
	}
	list := views.ToolList{Query: view.q, State: string(view.state), Filters: filters}
	filter := allowlist.Filter{Query: view.q, IDs: view.ids, Order: allowlist.OrderByServer}
	if view.ids != nil {
		list.Chosen, list.AllURL = len(view.ids), toolsView{q: view.q, state: view.state}.url(0)
	}
	if view.state != "" {
		filter.States = []allowlist.State{view.state}
		list.Total = counts[view.state]
	} else {
		list.Total = countsTotal(counts)
	}
	pages := max(1, (list.Total+toolsPerPage-1)/toolsPerPage)
	page := min(max(view.page, 1), pages)
	filter.Limit, filter.Offset = toolsPerPage, (page-1)*toolsPerPage
	rows, err := s.tools.List(ctx, filter)
	if err != nil {
		return views.ToolList{}, err
	}
	guides, err := s.guides.Guides(ctx, rows)
	if err != nil {
		return views.ToolList{}, err
	}
	ids := make([]int64, len(rows))
	for i, t := range rows {
		ids[i] = t.ID
	}
	saved, err := s.limits.Limits(ctx, ids)
	if err != nil {
		return views.ToolList{}, err
	}
	for _, t := range rows {
		title := groupTitle(t)
		if n := len(list.Groups); n == 0 || list.Groups[n-1].Title != title {
			list.Groups = append(list.Groups, views.ToolGroup{Title: title})
		}
		g := &list.Groups[len(list.Groups)-1]
		row := s.toolRow(t)
		s.addVoice(&row, t, guides[t.ID])
		l, has := saved[t.ID]
		addLimits(&row, t, l, has)
		list.Selectable = list.Selectable || row.CanEnable
		g.Rows = append(g.Rows, row)
	}
	list.Pager = views.Pager{Page: page, Pages: pages, From: filter.Offset + 1, To: filter.Offset + len(rows)}
	list.RefreshURL = view.url(page)
	if page > 1 {
		list.Pager.PrevURL = view.url(page - 1)
	}
	if page < pages {
		list.Pager.NextURL = view.url(page + 1)
	}
	all := counts // without search text or chosen rows, the filters counted the whole allowlist already
	if view.q != "" || view.ids != nil {
		if all, err = s.allowlistCounts(r); err != nil {
			return views.ToolList{}, err
		}
	}
	list.Seen = countsKey(all)
	switch {
	case view.q != "":
		list.Empty = fmt.Sprintf("No tool matches “%s”.", view.q)
	case view.ids != nil:
		list.Empty = "None of the chosen tools is in this view."
	case view.state != "" && list.Total == 0 && countsTotal(all) > 0:
		list.Empty = fmt.Sprintf("No tool is %s.", strings.ToLower(stateLabel(view.state)))
	default:
		list.Empty = "No tools yet."
		start := views.ConfigInfo{}
		start.Path, start.Loaded = s.configSource()
		start.Servers = len(s.servers.Status())
		list.Start = &start
	}
	return list, nil
}

// stateFilters are the links "All" and one per state, each with the count of rows matching
// the view's search, and those counts.
func (s *server) stateFilters(r *http.Request, view toolsView) (views.Filters, map[allowlist.State]int, error) {
	counts, err := s.tools.CountByState(r.Context(), allowlist.Filter{Query: view.q, IDs: view.ids})
	if err != nil {
		return views.Filters{}, nil, err
	}
	all := toolsView{q: view.q, ids: view.ids}
	f := views.Filters{Items: []views.StateFilter{{Label: "All", Count: countsTotal(counts), URL: all.url(0), Current: view.state == ""}}}
	for _, st := range allowlist.States() {
		v := toolsView{q: view.q, state: st, ids: view.ids}
		f.Items = append(f.Items, views.StateFilter{State: string(st), Label: stateLabel(st), Count: counts[st], URL: v.url(0), Current: view.state == st})
	}
	return f, counts, nil
}

// allowlistCounts counts the whole allowlist's rows per state.
func (s *server) allowlistCounts(r *http.Request) (map[allowlist.State]int, error) {
	return s.tools.CountByState(r.Context(), allowlist.Filter{})
}

func countsTotal(counts map[allowlist.State]int) int {
	n := 0
	for _, c := range counts {
		n += c
	}
	return n
}

// countsKey writes the count per state as the list's "seen" value: "proposed.enabled.disabled.withdrawn".
func countsKey(counts map[allowlist.State]int) string {
	parts := make([]string, 0, len(allowlist.States()))
	for _, st := range allowlist.States() {
		parts = append(parts, strconv.Itoa(counts[st]))
	}
	return strings.Join(parts, ".")
}

// toolsNews compares the counts a list was rendered from (seen) with the allowlist's now: nil
// when nothing changed, else the notice that offers to show the list again, naming seen.
func toolsNews(seen string, now map[allowlist.State]int) *views.ToolsNews {
	news := newsOf(seen, now)
	if news != nil {
		news.Seen = seen
	}
	return news
}

// newsOf is what toolsNews says.
func newsOf(seen string, now map[allowlist.State]int) *views.ToolsNews {
	if seen == countsKey(now) {
		return nil
	}
	var was [4]int
	for i, part := range strings.SplitN(seen, ".", len(was)) {
		was[i], _ = strconv.Atoi(part)
	}
	switch added := now[allowlist.StateProposed] - was[0]; {
	case added == 1:
		return &views.ToolsNews{Message: "1 new tool to review"}
	case added > 1:
		return &views.ToolsNews{Message: fmt.Sprintf("%d new tools to review", added)}
	}
	return &views.ToolsNews{Message: "The allowlist changed since this list was shown"}
}

// groupTitle names the group a row is listed under: its MCP server, or the local commands.
func groupTitle(t allowlist.Tool) string {
	if t.IsMCP() {
		return fmt.Sprintf("MCP server “%s”", t.Server())
	}
	return "Local commands"
}

// toolRow is the view of one row: everything the owner approves, with hidden characters spelled
// out and flagged (docs/design.md#rule-25).
func (s *server) toolRow(t allowlist.Tool) views.ToolRow {
	row := views.ToolRow{
		ID: t.ID, Name: t.Name, NameText: text(t.Name), State: string(t.State), Fingerprint: t.ApprovalDigest(),
		StateLabel: stateLabel(t.State), Destructive: t.Destructive, ReadOnly: t.ReadOnly,
		Description: text(t.Description), Provenance: text(t.Provenance),
		CanEnable:    allowlist.CanTransition(t.State, allowlist.StateEnabled),
		CanDisable:   allowlist.CanTransition(t.State, allowlist.StateDisabled),
		DisableLabel: "Disable",
	}
	if t.State == allowlist.StateProposed {
		// Declining a proposal disables it; the button says what the owner means.
		row.DisableLabel = "Reject"
	}
	invisible := reveal.Contains(t.Name) || reveal.Contains(t.Description) || reveal.InJSON(t.InputSchema)
	if t.IsMCP() {
		row.Where = fmt.Sprintf("MCP server “%s”", t.Server())
		if t.RemoteName() != t.Name {
			row.RemoteName = text(t.RemoteName())
		}
		invisible = invisible || reveal.Contains(t.RemoteName()) || reveal.Contains(t.Server())
		row.Mixed = reveal.MixedScripts(t.RemoteName())
	} else {
		row.Where = "Local command"
		row.Command = text(reveal.CommandLine(t.Cmd))
		invisible = invisible || slices.ContainsFunc(t.Cmd, reveal.Contains)
	}
	row.Invisible = invisible
	row.Mixed = row.Mixed || reveal.MixedScripts(t.Name)
	if schema := prettyJSON(t.InputSchema); schema != "" && schema != "{}" {
		row.Schema, row.HasSchema = text(schema), true
	}
	if t.RenameOf != "" {
		row.RenameOf = text(t.RenameOf)
	}
	if t.State == allowlist.StateEnabled && t.EnabledAt != nil {
		row.EnabledAt = timeOf(*t.EnabledAt)
	}
	// The diff matters while the owner has yet to approve the new shape; once enabled, it is
	// what they approved.
	if t.PreviousDeclared != "" && t.State != allowlist.StateEnabled && t.State != allowlist.StateWithdrawn {
		row.Diff, row.DiffTitle = declaredDiff(t.PreviousDeclared, t.Declared), "Changed since you approved it"
	}
	if row.CanEnable {
		// The Enable button sends the fingerprint of what the owner is looking at.
		vals, _ := json.Marshal(map[string]string{"fingerprint": row.Fingerprint})
		row.EnableVals = string(vals)
	}
	return row
}

// declaredDiff lists the fields in which two declared shapes (canonical JSON of the fields of
// mcp.DeclaredFields) differ, old and new side by side. A shape that does not parse is shown
// whole.
func declaredDiff(before, after string) []views.FieldDiff {
	if before == after {
		return nil
	}
	old, err1 := mcp.ParseDeclared(before)
	cur, err2 := mcp.ParseDeclared(after)
	changed, err3 := mcp.Differences(old, cur)
	if err1 != nil || err2 != nil || err3 != nil {
		return []views.FieldDiff{{Field: "Declared shape", Old: text(prettyJSON([]byte(before))), New: text(prettyJSON([]byte(after))), Block: true}}
	}
	var out []views.FieldDiff
	for _, f := range changed {
		out = append(out, views.FieldDiff{Field: f.Label, Old: fieldText(f, old), New: fieldText(f, cur), Block: f.JSON})
	}
	return out
}

// fieldText is a declared field's value as /tools shows it: JSON indented for reading.
func fieldText(f mcp.DeclaredField, d mcp.Declared) views.Text {
	if f.JSON {
		return text(prettyJSON([]byte(f.Show(d))))
	}
	return text(f.Show(d))
}

// prettyJSON indents a JSON document for reading, keeping its key order and escapes; text that
// is not JSON is returned as it is.
func prettyJSON(raw []byte) string {
	if len(bytes.TrimSpace(raw)) == 0 {
		return ""
	}
	var buf bytes.Buffer
	if err := json.Indent(&buf, raw, "", "  "); err != nil {
		return string(raw)
	}
	return buf.String()
}

// text splits s for display with its hidden characters spelled out.
func text(s string) views.Text {
	segs := reveal.Split(s)
	out := make(views.Text, len(segs))
	for i, g := range segs {
		out[i] = views.Segment{Text: g.Text, Hidden: g.Hidden, Why: g.Why}
	}
	return out
}
