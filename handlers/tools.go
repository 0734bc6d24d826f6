package handlers

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"

	"maven/app/allowlist"
	"maven/app/mcp"
	"maven/app/reveal"
	"maven/views"
)

// toolsPerPage keeps a page light however long the allowlist grows.
const toolsPerPage = 50

// maxQueryLen bounds the search text.
const maxQueryLen = 200

// stateOrder is the order of the groups on /tools: what needs the owner first.
func stateOrder() []allowlist.State {
	return []allowlist.State{allowlist.StateProposed, allowlist.StateEnabled, allowlist.StateDisabled, allowlist.StateWithdrawn}
}

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

// toolsPage is GET /tools: the whole page, or only the list when the search box or the pager
// asks (htmx).
func (s *server) toolsPage(w http.ResponseWriter, r *http.Request) error {
	q := strings.TrimSpace(r.URL.Query().Get("q"))
	if len(q) > maxQueryLen {
		q = q[:maxQueryLen]
	}
	page, _ := strconv.Atoi(r.URL.Query().Get("page"))
	list, err := s.toolList(r, q, page)
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
		Page: s.pageInfo(r, "Tools", "tools"), List: list, Servers: servers,
	})
	return nil
}

// toolList builds one page of the rows matching q, grouped by state, with the counts.
func (s *server) toolList(r *http.Request, q string, page int) (views.ToolList, error) {
	ctx := r.Context()
	counts, err := s.tools.CountByState(ctx, allowlist.Filter{Query: q})
	if err != nil {
		return views.ToolList{}, err
	}
	list := views.ToolList{Query: q}
	for _, st := range stateOrder() {
		list.Counts = append(list.Counts, views.StateCount{State: string(st), Label: stateLabel(st), Count: counts[st]})
		list.Total += counts[st]
	}
	pages := max(1, (list.Total+toolsPerPage-1)/toolsPerPage)
	page = min(max(page, 1), pages)
	offset := (page - 1) * toolsPerPage
	rows, err := s.tools.List(ctx, allowlist.Filter{
		Query: q, Order: allowlist.OrderByState, Limit: toolsPerPage, Offset: offset,
	})
	if err != nil {
		return views.ToolList{}, err
	}
	for _, t := range rows {
		st := t.State
		if n := len(list.Groups); n == 0 || list.Groups[n-1].State != string(st) {
			list.Groups = append(list.Groups, views.ToolGroup{State: string(st), Label: stateLabel(st), Count: counts[st]})
		}
		g := &list.Groups[len(list.Groups)-1]
		g.Rows = append(g.Rows, s.toolRow(t))
	}
	list.Pager = views.Pager{Page: page, Pages: pages, From: offset + 1, To: offset + len(rows)}
	list.RefreshURL = toolsURL(q, page)
	if page > 1 {
		list.Pager.PrevURL = toolsURL(q, page-1)
	}
	if page < pages {
		list.Pager.NextURL = toolsURL(q, page+1)
	}
	switch {
	case q != "":
		list.Empty = fmt.Sprintf("No tool matches “%s”.", q)
	default:
		list.Empty = "No tools yet. Local commands come from the config file; MCP servers propose theirs once they connect."
	}
	return list, nil
}

func toolsURL(q string, page int) string {
	v := url.Values{}
	if q != "" {
		v.Set("q", q)
	}
	v.Set("page", strconv.Itoa(page))
	return "/tools?" + v.Encode()
}

// toolRow is the view of one row: everything the owner approves, with hidden characters spelled
// out and flagged (DESIGN.md rule 25).
func (s *server) toolRow(t allowlist.Tool) views.ToolRow {
	row := views.ToolRow{
		ID: t.ID, Name: t.Name, NameText: text(t.Name), State: string(t.State), Fingerprint: t.ApprovalDigest(),
		StateLabel: stateLabel(t.State), Destructive: t.Destructive, ReadOnly: t.ReadOnly,
		Description: text(t.Description), Provenance: text(t.Provenance),
		CanEnable:  allowlist.CanTransition(t.State, allowlist.StateEnabled),
		CanDisable: allowlist.CanTransition(t.State, allowlist.StateDisabled),
		UpdatedAt:  formatTime(t.UpdatedAt),
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
		row.EnabledAt = formatTime(*t.EnabledAt)
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

// declaredDiff lists the fields in which two declared shapes (canonical JSON of name,
// description, inputSchema and readOnlyHint) differ, old and new side by side. A shape that
// does not parse is shown whole.
func declaredDiff(before, after string) []views.FieldDiff {
	if before == after {
		return nil
	}
	old, err1 := mcp.ParseDeclared(before)
	cur, err2 := mcp.ParseDeclared(after)
	if err1 != nil || err2 != nil {
		return []views.FieldDiff{{Field: "Declared shape", Old: text(prettyJSON([]byte(before))), New: text(prettyJSON([]byte(after))), Block: true}}
	}
	var out []views.FieldDiff
	if old.Name != cur.Name {
		out = append(out, views.FieldDiff{Field: "Name", Old: text(old.Name), New: text(cur.Name)})
	}
	if old.Description != cur.Description {
		out = append(out, views.FieldDiff{Field: "Description", Old: text(old.Description), New: text(cur.Description)})
	}
	if was, now := prettyJSON(old.InputSchema), prettyJSON(cur.InputSchema); was != now {
		out = append(out, views.FieldDiff{Field: "Input schema", Old: text(orEmpty(was)), New: text(orEmpty(now)), Block: true})
	}
	if old.ReadOnlyHint != cur.ReadOnlyHint {
		out = append(out, views.FieldDiff{Field: "Read-only claim (readOnlyHint)", Old: text(claim(old.ReadOnlyHint)), New: text(claim(cur.ReadOnlyHint))})
	}
	return out
}

func claim(readOnly bool) string {
	if readOnly {
		return "claims read-only"
	}
	return "no read-only claim: may change things"
}

func orEmpty(s string) string {
	if s == "" {
		return "{}"
	}
	return s
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

// toolAsShown answers an Enable whose row no longer has the shape its page showed (the form's
// fingerprint) with the row as it is now and what changed, before the passkey is asked for.
// EnableTool checks again, in its transaction: this only spares the owner a gesture.
func (s *server) toolAsShown(next http.Handler) http.Handler {
	return s.handle(func(w http.ResponseWriter, r *http.Request) error {
		id, err := idParam(r)
		if err != nil {
			return err
		}
		if err := readForm(w, r, maxJSONBody); err != nil {
			return err
		}
		shown := r.PostForm.Get("fingerprint")
		if shown == "" {
			return fmt.Errorf("%w: enable without the fingerprint shown", errBadRequest)
		}
		t, err := s.tools.Get(r.Context(), id)
		if err != nil {
			return err
		}
		var changed *allowlist.ShapeChangedError
		if err := allowlist.CheckShown(t, shown); errors.As(err, &changed) {
			return s.toolChangedSinceShown(w, r, changed)
		}
		next.ServeHTTP(w, r)
		return nil
	})
}

// toolEnablePost enables a row. requireStepUp has already spent the session's grant for exactly
// this row as the page showed it; without it this handler never runs.
func (s *server) toolEnablePost(w http.ResponseWriter, r *http.Request) error {
	id, err := idParam(r)
	if err != nil {
		return err
	}
	t, err := s.tools.EnableTool(r.Context(), id, proofFrom(r.Context()))
	var changed *allowlist.ShapeChangedError
	switch {
	case errors.As(err, &changed):
		return s.toolChangedSinceShown(w, r, changed)
	case err != nil:
		return err
	}
	return s.toolChanged(w, r, t)
}

// toolChangedSinceShown refuses an approval of a row that changed since its page showed it: 409
// with the row as it is now and, field by field, what changed since that page. Nothing was
// changed. A browser without htmx gets the error page, which says to reload.
func (s *server) toolChangedSinceShown(w http.ResponseWriter, r *http.Request, changed *allowlist.ShapeChangedError) error {
	if !isHTMX(r) {
		return changed
	}
	row := s.toolRow(changed.Tool)
	row.Diff, row.DiffTitle = nil, "Changed since this page showed it: nothing was enabled"
	seen, err := s.tools.DeclaredWhen(r.Context(), changed.Tool.ID, changed.Shown)
	if err != nil {
		return err
	}
	if seen != "" {
		row.Diff = declaredDiff(seen, changed.Tool.Declared)
	}
	row.ChangedSinceShown = true
	s.log.Info("approval refused: the tool changed since it was shown", "tool", changed.Tool.ID,
		"shown", changed.Shown, "now", changed.Tool.ApprovalDigest())
	s.renderPartial(w, r, http.StatusConflict, views.PartialToolRow, row)
	return nil
}

// toolDisablePost disables a row. Disabling only narrows what can run: no step-up.
func (s *server) toolDisablePost(w http.ResponseWriter, r *http.Request) error {
	id, err := idParam(r)
	if err != nil {
		return err
	}
	t, err := s.tools.DisableTool(r.Context(), id, "owner")
	if err != nil {
		return err
	}
	return s.toolChanged(w, r, t)
}

// toolChanged answers an action on a row: the row alone for htmx, back to the list otherwise.
// The row is swapped at once; the list then reloads itself so the row moves to its new group
// and the counts follow.
func (s *server) toolChanged(w http.ResponseWriter, r *http.Request, t allowlist.Tool) error {
	if isHTMX(r) {
		w.Header().Set(hxTrigger, `{"`+eventToolsChanged+`":{"target":"#tool-list"}}`)
	}
	return s.swapOrRedirect(w, r, "/tools", views.PartialToolRow, func() (any, error) { return s.toolRow(t), nil })
}
