package handlers

import (
	"context"
	"fmt"
	"net/http"
	"strings"

	"maven/app/approval"
	"maven/app/auth"
	"maven/app/mcp"
	"maven/views"
)

// ServerStatuses reports the MCP servers' connection states (*mcp.Manager).
type ServerStatuses interface {
	Status() []mcp.ServerStatus
}

// ServerCommands is what the handlers need of the approvals of stdio servers' command lines
// (*approval.Service).
type ServerCommands interface {
	Pending(ctx context.Context) ([]approval.PendingCommand, error)
	// Command returns approval.ErrNotFound if no command line has that id.
	Command(ctx context.Context, id int64) (approval.Command, error)
	// Approve needs a step-up for auth.ActionAddServer on id (else auth.ErrStepUpRequired) and
	// returns the server's name; approval.ErrNotFound if no command line has that id.
	Approve(ctx context.Context, id int64, proof auth.StepUp) (string, error)
}

// ServerWaker wakes a server's supervisor after its command line was approved (*mcp.Manager).
type ServerWaker interface {
	Wake(server string)
}

// serversCardGet is the "MCP servers" card alone, which polls itself every two seconds. The
// poll carries what the tool list on the page was rendered from (seen); when the allowlist has
// changed since, the answer also tells the list so (a notice it can act on), so that tools a
// server proposes after the page loaded do not wait for a reload.
func (s *server) serversCardGet(w http.ResponseWriter, r *http.Request) error {
	card, err := s.serversCard(r)
	if err != nil {
		return err
	}
	if seen := r.URL.Query().Get("seen"); seen != "" {
		now, err := s.allowlistCounts(r)
		if err != nil {
			return err
		}
		card.News = toolsNews(seen, now)
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
	if err := s.approveCommands(r, []int64{id}); err != nil {
		return err
	}
	return s.swapOrRedirect(w, r, "/tools", views.PartialServers, func() (any, error) { return s.serversCard(r) })
}

// serverCommandsApprovePost approves the command lines the owner selected (form field
// "command", repeated) with the one step-up requireStepUp spent for all of them, and starts
// their servers.
func (s *server) serverCommandsApprovePost(w http.ResponseWriter, r *http.Request) error {
	approval := proofFrom(r.Context()).Approval()
	ids := make([]int64, 0, len(approval.Items))
	for _, it := range approval.Items {
		ids = append(ids, it.Target)
	}
	if err := s.approveCommands(r, ids); err != nil {
		return err
	}
	return s.swapOrRedirect(w, r, "/tools", views.PartialServers, func() (any, error) { return s.serversCard(r) })
}

// approveCommands approves each command line with the request's proof and wakes its server.
// Each approval stands on its own: one that fails stops the rest, and those before it stay
// approved (and their servers start), as if approved one by one.
func (s *server) approveCommands(r *http.Request, ids []int64) error {
	for _, id := range ids {
		server, err := s.commands.Approve(r.Context(), id, proofFrom(r.Context()))
		if err != nil {
			return err
		}
		s.log.Info("stdio command line approved", "server", server, "command_id", id)
		s.waker.Wake(server)
	}
	return nil
}

// commandsSelected approves adding the servers of the command lines the owner selected (form
// field "command", repeated): one step-up names every one of them.
func commandsSelected(w http.ResponseWriter, r *http.Request) (auth.Approval, error) {
	if err := readForm(w, r, maxJSONBody); err != nil {
		return auth.Approval{}, err
	}
	return selected(auth.ActionAddServer, r.PostForm["command"], false)
}

// serversCard is the view of every server's status, with the command lines that wait for the
// owner's approval beside their servers. Names, targets, command lines and errors are shown as
// text: html/template escapes whatever a server or the config holds.
func (s *server) serversCard(r *http.Request) (views.ServersCard, error) {
	statuses := s.servers.Status()
	card := views.ServersCard{Servers: make([]views.ServerRow, 0, len(statuses))}
	pending, err := s.pendingByServer(r, statuses)
	if err != nil {
		return views.ServersCard{}, err
	}
	tally := map[string]int{}
	var order []string
	for _, st := range statuses {
		p, waits := pending[st.Name]
		row := s.serverRow(st)
		if waits {
			row.Pending = &p
			card.Waiting++
		}
		if tally[row.StateLabel] == 0 {
			order = append(order, row.StateLabel)
		}
		tally[row.StateLabel]++
		card.Servers = append(card.Servers, row)
	}
	for _, label := range order {
		card.Summary = append(card.Summary, fmt.Sprintf("%d %s", tally[label], label))
	}
	return card, nil
}

// pendingByServer returns, per server, the command line its supervisor is held back by right
// now: a pending row of a server since removed from the config, or whose config went back to
// an approved command line, is no longer what would start.
func (s *server) pendingByServer(r *http.Request, statuses []mcp.ServerStatus) (map[string]views.PendingCommand, error) {
	out := map[string]views.PendingCommand{}
	held := map[string]bool{}
	for _, st := range statuses {
		if st.State == mcp.StateAwaitingApproval {
			held[st.Name] = true
		}
	}
	if len(held) == 0 {
		return out, nil
	}
	pending, err := s.commands.Pending(r.Context())
	if err != nil {
		return nil, err
	}
	for _, p := range pending {
		if held[p.Server] {
			out[p.Server] = pendingView(p)
		}
	}
	return out, nil
}

func pendingView(p approval.PendingCommand) views.PendingCommand {
	v := views.PendingCommand{ID: p.ID, Server: p.Server, Display: p.Display, Seen: timeOf(p.SeenAt)}
	if p.Approved != "" && p.Approved != p.Display {
		v.Changed = true
		v.Lines = lineDiff(p.Approved, p.Display)
	}
	return v
}

// serverRow is the view of one server. A healthy server is one line; a server that wants the
// owner (to approve it, sign in to it, give it a secret) says so calmly, with what to do; only a
// failure is shown as trouble, with its last error.
func (s *server) serverRow(st mcp.ServerStatus) views.ServerRow {
	state := st.State
	row := views.ServerRow{
		Name: st.Name, Transport: st.Transport, Target: st.Target, State: string(state),
		StateLabel: state.Words(), Tools: st.Tools, Trust: st.Trust, TrustText: st.TrustText,
		TrustShort: trustShort(st.Trust), Since: timeOf(st.Since), Tone: serverTone(state),
		Open: state.Trouble() || state.NeedsOwner(), LastErrorLabel: "Last error",
	}
	if state.Trouble() {
		row.LastError = text(st.LastError)
		if st.LastStderr != "" {
			for line := range strings.SplitSeq(st.LastStderr, "\n") {
				row.LastStderr = append(row.LastStderr, text(line))
			}
		}
	}
	switch state {
	case mcp.StateAwaitingApproval:
		row.Action = "Check its command line below, then approve it to start it."
	case mcp.StateNeedsAuth:
		row.SignIn = s.signInView(st)
		// What it said when it refused Maven: not a failure.
		row.LastError, row.LastErrorLabel = text(st.LastError), "Last answer"
		if row.SignIn == nil {
			row.Action, row.ActionURL, row.ActionLabel = "It wants you to sign in to it. Maven keeps a sign-in sealed in its vault, and there is none yet: first register a passkey that can unlock Maven (that creates the vault and its recovery code).", "/passkeys", "Passkeys"
		} else {
			row.Action = "It wants you to sign in to it, at " + hostOf(st.AuthServer) + ", before Maven can use it."
		}
	case mcp.StateLocked:
		row.Action, row.ActionURL, row.ActionLabel = lockedAction(st, s.vault.Locked())
	}
	return row
}

// serverTone is how a server's state is shown: connected is good, a failure is trouble, and
// anything else (the owner has something to do, or it is on its way) is calm.
func serverTone(state mcp.State) string {
	switch {
	case state == mcp.StateConnected:
		return "ok"
	case state.Trouble():
		return "trouble"
	}
	return "calm"
}

// lockedAction says what a locked server waits for, and where the owner gives it: its secrets,
// its sealed OAuth sign-in, or both.
func lockedAction(st mcp.ServerStatus, vaultLocked bool) (action, url, label string) {
	switch {
	case vaultLocked && st.SignInSealed && st.UsesSecrets:
		return "It needs a secret and its sign-in, which stay sealed until you unlock Maven.", "/unlock", "Unlock"
	case vaultLocked && st.SignInSealed:
		return "Its sign-in stays sealed until you unlock Maven.", "/unlock", "Unlock"
	case vaultLocked:
		return "It needs a secret, which stays sealed until you unlock Maven.", "/unlock", "Unlock"
	case st.SignInSealed && !st.UsesSecrets:
		// Unlocked a moment ago: the supervisor opens the sign-in on its own.
		return "Maven is unlocked; it opens its sealed sign-in now.", "", ""
	}
	return "It needs a secret that is not set.", "/secrets", "Set it on Secrets"
}

// signInView is what the card shows of a server that waits for a sign-in, with its Sign in
// button; nil when there is no vault to seal the sign-in in.
func (s *server) signInView(st mcp.ServerStatus) *views.SignIn {
	if !s.vault.HasVault() {
		return nil
	}
	digest := st.SignInDigest()
	return &views.SignIn{ID: "sign-in-" + strings.TrimPrefix(digest, "sha256:")[:12], AuthServer: st.AuthServer,
		AuthServerHost: hostOf(st.AuthServer), SignInPage: signInPage(st), Scopes: strings.Fields(st.AuthScopes), Fingerprint: digest}
}

// trustShort is the trust level in a few words, for the server's one line; the card's details
// spell it out (docs/design.md#rule-14).
func trustShort(trust string) string {
	switch trust {
	case mcp.TrustLocalProcess:
		return "local process, full access"
	case mcp.TrustLoopback:
		return "service on this machine"
	case mcp.TrustRemoteTLS:
		return "remote, TLS"
	case mcp.TrustRemotePlaintext:
		return "remote, plain HTTP"
	}
	return trust
}

// lineDiff shows how a command line changed, line by line (the command and its arguments, then
// each environment variable, then the working directory): unchanged lines once, removed lines
// as "was", added ones as "now", in order (a longest common subsequence; a command line has a
// handful of lines).
func lineDiff(before, after string) []views.DiffLine {
	a, b := strings.Split(before, "\n"), strings.Split(after, "\n")
	// lcs[i][j] is the length of the longest common subsequence of a[i:] and b[j:].
	lcs := make([][]int, len(a)+1)
	for i := range lcs {
		lcs[i] = make([]int, len(b)+1)
	}
	for i := len(a) - 1; i >= 0; i-- {
		for j := len(b) - 1; j >= 0; j-- {
			if a[i] == b[j] {
				lcs[i][j] = lcs[i+1][j+1] + 1
			} else {
				lcs[i][j] = max(lcs[i+1][j], lcs[i][j+1])
			}
		}
	}
	var out []views.DiffLine
	i, j := 0, 0
	for i < len(a) || j < len(b) {
		switch {
		case i < len(a) && j < len(b) && a[i] == b[j]:
			out = append(out, views.DiffLine{Kind: "same", Text: b[j]})
			i, j = i+1, j+1
		case i < len(a) && (j == len(b) || lcs[i+1][j] >= lcs[i][j+1]):
			out = append(out, views.DiffLine{Kind: "was", Text: a[i]})
			i++
		default:
			out = append(out, views.DiffLine{Kind: "now", Text: b[j]})
			j++
		}
	}
	return out
}
