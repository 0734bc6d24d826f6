package handlers

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"

	"maven/app/auth"
	"maven/app/clients"
	"maven/views"
)

// clientsPage is /clients: every client, how it authenticates, its tools, when it was approved
// and last seen, and the calls its agents made (docs/design.md#rule-29).
func (s *server) clientsPage(w http.ResponseWriter, r *http.Request) error {
	list, err := s.clientList(r.Context(), "")
	if err != nil {
		return err
	}
	s.renderPage(w, r, http.StatusOK, views.PageClients, views.ClientsPage{Page: s.pageInfo(r, "Clients", "clients"), List: list})
	return nil
}

// clientList is /clients' list, with message saying what was just done.
func (s *server) clientList(ctx context.Context, message string) (views.ClientList, error) {
	all, err := s.clients.List(ctx)
	if err != nil {
		return views.ClientList{}, err
	}
	tools, err := s.enabledTools(ctx)
	if err != nil {
		return views.ClientList{}, err
	}
	names := map[int64]views.Text{}
	for _, t := range tools {
		names[t.ID] = t.Name
	}
	list := views.ClientList{Tools: tools, Message: message}
	for _, c := range all {
		list.Clients = append(list.Clients, clientRow(c, names))
	}
	return list, nil
}

// clientRow is one client on /clients; names are the enabled rows' names (a client's row that
// is not enabled is not seen by its agents, and not listed).
func clientRow(c clients.Client, names map[int64]views.Text) views.ClientRow {
	row := views.ClientRow{ID: c.ID, Name: text(c.Name), Label: c.Name, IDText: text(c.ID), How: c.Kind.Words(),
		State: string(c.State), StateWords: c.State.Words(), AllTools: c.AllTools, ToolIDs: map[int64]bool{},
		Approved: timeOf(c.ApprovedAt), LastSeen: timeOf(c.LastSeen), Created: timeOf(c.CreatedAt), Calls: c.Calls,
		Revocable: c.State == clients.StateApproved}
	for _, u := range c.RedirectURIs {
		row.Redirects = append(row.Redirects, text(u))
	}
	for _, id := range c.ToolIDs {
		row.ToolIDs[id] = true
		if n, ok := names[id]; ok {
			row.ToolNames = append(row.ToolNames, n)
		}
	}
	return row
}

// clientRevokePost is Revoke: the client's tokens stop working at once, and its agents'
// sessions end. It needs no step-up: it takes away.
func (s *server) clientRevokePost(w http.ResponseWriter, r *http.Request) error {
	if err := readForm(w, r, maxJSONBody); err != nil {
		return err
	}
	ctx := r.Context()
	c, err := s.clients.Client(ctx, r.PostForm.Get("client"))
	if err != nil {
		return err
	}
	if err := s.clients.Revoke(ctx, c.ID, "owner"); err != nil {
		return err
	}
	s.log.Info("client revoked", "client", c.ID)
	return s.swapOrRedirect(w, r, "/clients", views.PartialClientList, func() (any, error) {
		return s.clientList(ctx, fmt.Sprintf("“%s” is revoked: its tokens no longer work.", c.Name))
	})
}

// clientToolsPost saves a client's tools: the step-up approved exactly this client and set
// (requireStepUp, clientToolsAsShown). Its agents see the new set at once.
func (s *server) clientToolsPost(w http.ResponseWriter, r *http.Request) error {
	ctx := r.Context()
	id := r.PostForm.Get("client")
	choice, err := s.choiceOf(ctx, r.PostForm)
	if err != nil {
		return err
	}
	c, err := s.clients.Client(ctx, id)
	if err != nil {
		return err
	}
	if err := s.clients.SetTools(ctx, id, choice, proofFrom(ctx)); err != nil {
		return err
	}
	return s.swapOrRedirect(w, r, "/clients", views.PartialClientList, func() (any, error) {
		return s.clientList(ctx, fmt.Sprintf("“%s” now sees %s.", c.Name, choiceWords(choice)))
	})
}

// clientToolsAsShown approves saving a client's tools as the page showed the choice: the client
// (field "client") and the set (ToolsDigest). What the prompt says of it is kept with its
// digest.
func (s *server) clientToolsAsShown(w http.ResponseWriter, r *http.Request) (auth.Approval, error) {
	if err := readForm(w, r, maxJSONBody); err != nil {
		return auth.Approval{}, err
	}
	ctx := r.Context()
	c, err := s.clients.Client(ctx, r.PostForm.Get("client"))
	if err != nil {
		return auth.Approval{}, err
	}
	choice, err := s.choiceOf(ctx, r.PostForm)
	if err != nil {
		return auth.Approval{}, err
	}
	digest := clients.ToolsDigest(c.ID, choice)
	s.offers.put(digest, fmt.Sprintf("let “%s” see %s", c.Name, choiceWords(choice)))
	return auth.One(auth.ActionClientTools, 0, digest), nil
}

// clientProblem maps the errors of the consent and /clients (clients' and the consent's own).
func clientProblem(err error) (problem, bool) {
	info := slog.LevelInfo
	switch {
	case errors.Is(err, clients.ErrNoRequest):
		return problem{http.StatusConflict, "This request to connect a client was answered already, expired, or was opened in another window. Start again from the client.", info}, true
	case errors.Is(err, errToolsChanged):
		return problem{http.StatusConflict, "The tools changed since the page showed them. Reload the page and choose again.", info}, true
	case errors.Is(err, errOfferGone):
		return problem{http.StatusConflict, "Maven no longer knows what this confirmation was for. Reload the page and try again.", info}, true
	case errors.Is(err, clients.ErrNotFound):
		return problem{http.StatusNotFound, "That client does not exist, or is no longer approved.", info}, true
	}
	return problem{}, false
}
