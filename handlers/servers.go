package handlers

import (
	"fmt"
	"net/http"
	"time"

	"maven/app/mcp"
	"maven/views"
)

// serversCardGet is the "MCP servers" card alone, which polls itself every two seconds.
func (s *server) serversCardGet(w http.ResponseWriter, r *http.Request) error {
	card, err := s.serversCard(r)
	if err != nil {
		return err
	}
	s.renderPartial(w, r, http.StatusOK, views.PartialServers, card)
	return nil
}

// serverCommandApprovePost approves a stdio server's command line and wakes its supervisor,
// which starts it. requireStepUp has already spent the session's grant for exactly this command
// line; without it this handler never runs.
func (s *server) serverCommandApprovePost(w http.ResponseWriter, r *http.Request) error {
	id, err := idParam(r)
	if err != nil {
		return err
	}
	if s.commands == nil {
		return errNoPage
	}
	server, err := s.commands.Approve(r.Context(), id, proofFrom(r.Context()))
	if err != nil {
		return err
	}
	s.log.Info("stdio command line approved", "server", server, "command_id", id)
	if s.waker != nil {
		s.waker.Wake(server)
	}
	return s.swapOrRedirect(w, r, "/tools", views.PartialServers, func() (any, error) { return s.serversCard(r) })
}

// serversCard is the view of every server's status and of the command lines that wait for the
// owner's approval. Names, targets, command lines and errors are shown as text: html/template
// escapes whatever a server or the config holds.
func (s *server) serversCard(r *http.Request) (views.ServersCard, error) {
	if s.servers == nil {
		return views.ServersCard{}, nil
	}
	now := s.now()
	statuses := s.servers.Status()
	card := views.ServersCard{Poll: true, Servers: make([]views.ServerRow, 0, len(statuses))}
	// Only the command lines a supervisor is held back by right now: a pending row of a server
	// since removed from the config, or whose config went back to an approved command line, is
	// no longer what would start.
	waiting := map[string]bool{}
	for _, st := range statuses {
		if st.State == mcp.StateDisabled && st.LastError == mcp.MsgUnapproved {
			waiting[st.Name] = true
		}
	}
	if s.commands != nil && len(waiting) > 0 {
		pending, err := s.commands.Pending(r.Context())
		if err != nil {
			return views.ServersCard{}, err
		}
		for _, p := range pending {
			if waiting[p.Server] {
				card.Pending = append(card.Pending, views.PendingCommand{
					ID: p.ID, Server: p.Server, Display: p.Display, SeenAt: formatTime(p.SeenAt),
				})
			}
		}
	}
	// A poll would replace the Approve button while its passkey prompt is open, and the step-up
	// retries the button it started from; the card polls again once nothing waits.
	card.Poll = len(card.Pending) == 0
	for _, st := range statuses {
		row := views.ServerRow{
			Name: st.Name, Transport: st.Transport, Target: st.Target, State: string(st.State),
			StateLabel: serverStateLabel(st.State), LastError: text(st.LastError), Tools: st.Tools,
			Trust: st.Trust, TrustText: st.TrustText, Since: relativeTime(now, st.Since),
			Trouble: st.State == mcp.StateBackoff || st.State == mcp.StateFailed || st.State == mcp.StateLocked,
		}
		if !st.Since.IsZero() {
			row.SinceISO = st.Since.UTC().Format(time.RFC3339)
		}
		card.Servers = append(card.Servers, row)
	}
	return card, nil
}

func serverStateLabel(st mcp.State) string {
	switch st {
	case mcp.StateLocked:
		return "locked: needs a secret"
	case mcp.StateConnecting:
		return "connecting"
	case mcp.StateConnected:
		return "connected"
	case mcp.StateBackoff:
		return "waiting to retry"
	case mcp.StateFailed:
		return "failed"
	case mcp.StateDisabled:
		return "disabled"
	}
	return string(st)
}

// relativeTime says how long ago t was, in the words a person uses.
func relativeTime(now, t time.Time) string {
	if t.IsZero() {
		return "—"
	}
	d := now.Sub(t)
	plural := func(n int, unit string) string {
		if n == 1 {
			return "1 " + unit + " ago"
		}
		return fmt.Sprintf("%d %ss ago", n, unit)
	}
	switch {
	case d < 10*time.Second:
		return "just now"
	case d < time.Minute:
		return plural(int(d/time.Second), "second")
	case d < time.Hour:
		return plural(int(d/time.Minute), "minute")
	case d < 48*time.Hour:
		return plural(int(d/time.Hour), "hour")
	}
	return plural(int(d/(24*time.Hour)), "day")
}

// formatTime shows a time in the daemon's zone, to the minute.
func formatTime(t time.Time) string {
	if t.IsZero() {
		return ""
	}
	return t.Local().Format("2 Jan 2006 15:04")
}
