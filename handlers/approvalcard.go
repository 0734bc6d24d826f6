package handlers

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"

	"maven/app/mcp"
	"maven/app/pending"
	"maven/app/reveal"
	"maven/views"
)

// Bounds of what a call's card shows unfolded: a longer value or result folds.
const (
	foldChars = 160
	foldLines = 3
	// summaryChars bounds the arguments' one line in the list.
	summaryChars = 120
)

// approvalCard is the view of one call: in the list, what it is and where it stands; on its
// page (full), everything the owner approves — the client, the server and its trust, the
// approved description, every argument revealed, what is sent absent, the time left — and the
// buttons while it waits (docs/design.md#rule-30).
func (s *server) approvalCard(ctx context.Context, c pending.Call, full bool) views.ApprovalCard {
	now := s.now()
	v := views.ApprovalCard{ID: c.ID, URL: "/approvals/" + strconv.FormatInt(c.ID, 10), Full: full,
		State: string(c.State), StateLabel: c.State.Words(), Client: text(c.Client.Name), Tool: c.Tool, ToolText: text(c.Tool),
		Why: c.Why, Created: timeOf(c.Created), Expires: timeOf(c.Expires), Reason: text(c.Reason),
		Live: full && !c.State.Final()}
	v.Tone, _ = approvalTones.Of(c.State)
	if c.State == pending.StatePending {
		v.TimeLeft = timeLeft(c.Expires.Sub(now))
		v.CanDecide = now.Before(c.Expires)
		v.Binding = pending.Binding(c)
	}
	if srv := c.Server(); srv != "" {
		v.Server = text(srv)
		v.Trust, v.TrustText = "", "This server is no longer in Maven's config."
		for _, st := range s.servers.Status() {
			if st.Name == srv {
				v.Trust, v.TrustText = st.Trust, st.TrustText
			}
		}
		v.TrustShort = trustShort(v.Trust)
	}
	v.Args, v.Summary = callArgs(c.Args)
	for _, a := range c.Absent {
		v.Absent = append(v.Absent, text(a))
	}
	if c.DecidedBy != "" {
		verb := "Approved"
		if c.State == pending.StateDenied {
			verb = "Denied"
		}
		v.Decided = fmt.Sprintf("%s by %s, %s.", verb, c.DecidedBy, timeOf(c.DecidedAt).Text)
	}
	if c.Result != nil {
		out := c.Result.Output
		if out == "" {
			out = "(no output)"
		}
		v.Result = &views.ApprovalResult{Text: text(out), IsError: c.Result.IsError, Long: long(out)}
	}
	if c.Deliveries != nil {
		v.NotDelivered = !c.Delivered() && c.State == pending.StatePending
		for _, d := range c.Deliveries {
			v.Deliveries = append(v.Deliveries, views.Delivery{Through: d.Notifier.Words(), Target: text(d.Target), OK: d.OK, Err: text(d.Err)})
		}
	}
	if full {
		v.Description, v.Limits = text(s.approvedDescription(ctx, c)), text(s.callLimits(ctx, c))
	}
	return v
}

// approvedDescription is the description of the call's row as the owner approved it: its
// declared shape's, or a local command's own; "" when the row cannot be read.
func (s *server) approvedDescription(ctx context.Context, c pending.Call) string {
	row, err := s.tools.Get(ctx, c.ToolID)
	if err != nil {
		s.log.Warn("approvals: read a call's row", "call", c.ID, "tool", c.ToolID, "err", err)
		return ""
	}
	if row.IsMCP() && row.Declared != "" && row.ApprovalDigest() == c.Fingerprint {
		if d, err := mcp.ParseDeclared(row.Declared); err == nil {
			return d.Description
		}
	}
	if row.ApprovalDigest() != c.Fingerprint {
		return "(The tool changed since this call was made; the call will not run.)"
	}
	return row.Description
}

// callLimits are the owner's limits in force on a call's row, in short ("temperature 17–23"),
// which the call is within, since none outside them becomes a pending call
// (docs/design.md#rule-33); "" when there are none, or the row is no longer the call's shape.
func (s *server) callLimits(ctx context.Context, c pending.Call) string {
	row, err := s.tools.Get(ctx, c.ToolID)
	if err != nil || row.ApprovalDigest() != c.Fingerprint {
		return ""
	}
	saved, err := s.limits.Limits(ctx, []int64{c.ToolID})
	if err != nil {
		s.log.Warn("approvals: read a call's limits", "call", c.ID, "tool", c.ToolID, "err", err)
		return ""
	}
	if l, ok := saved[c.ToolID]; ok && l.InForce(row) && len(l.Set.Props) > 0 {
		return limitsSummary(l.Set)
	}
	return ""
}

// callArgs are a call's canonical arguments, each by name with its value as text (a string as
// it is, anything else as its JSON), revealed and folded when long; and all of them in one
// line, cut.
func callArgs(raw json.RawMessage) ([]views.ApprovalArg, views.Text) {
	var m map[string]json.RawMessage
	if json.Unmarshal(raw, &m) != nil || len(m) == 0 {
		return nil, text("no arguments")
	}
	var out []views.ApprovalArg
	var line []string
	for _, k := range slices.Sorted(maps.Keys(m)) {
		value := string(m[k])
		var str string
		if json.Unmarshal(m[k], &str) == nil {
			value = str
		}
		out = append(out, views.ApprovalArg{Name: text(k), Value: text(value), Long: long(value)})
		line = append(line, k+" "+reveal.OneLine(value))
	}
	summary, _ := reveal.Cut(strings.Join(line, ", "), summaryChars, "…")
	return out, text(summary)
}

// long reports whether a value is folded.
func long(s string) bool {
	return len([]rune(s)) > foldChars || strings.Count(s, "\n") >= foldLines
}

// timeLeft says how long a call still waits: "4 min 10 s left".
func timeLeft(d time.Duration) string {
	switch {
	case d <= 0:
		return "expired"
	case d < time.Minute:
		return fmt.Sprintf("%d s left", int(d.Round(time.Second)/time.Second))
	case d < time.Hour:
		d = d.Round(time.Second)
		return fmt.Sprintf("%d min %d s left", int(d/time.Minute), int(d%time.Minute/time.Second))
	}
	d = d.Round(time.Minute)
	return fmt.Sprintf("%d h %d min left", int(d/time.Hour), int(d%time.Hour/time.Minute))
}
