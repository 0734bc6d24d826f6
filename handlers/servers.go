package handlers

import (
	"fmt"
	"net/http"
	"time"

	"maven/app/mcp"
	"maven/views"
)

// serversCardGet is the "MCP servers" card alone, which polls itself every two seconds.
func (s *server) serversCardGet(w http.ResponseWriter, r *http.Request) {
	s.renderPartial(w, r, http.StatusOK, views.PartialServers, s.serversCard())
}

// serversCard is the view of every server's status. Names, targets and errors are shown as
// text: html/template escapes whatever a server sends.
func (s *server) serversCard() views.ServersCard {
	if s.servers == nil {
		return views.ServersCard{}
	}
	now := s.now()
	statuses := s.servers.Status()
	card := views.ServersCard{Poll: true, Servers: make([]views.ServerRow, 0, len(statuses))}
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
	return card
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
