package handlers

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strconv"

	"maven/app/auth"
	"maven/app/pending"
	"maven/internal/enum"
	"maven/views"
)

// Approvals keeps the calls that wait for the owner's approval on the phone (*pending.Service,
// docs/design.md#rule-30).
type Approvals interface {
	// Page returns the first limit calls that wait, counting the rest, and the recent ones.
	Page(ctx context.Context, limit int) (pending.Listing, error)
	// Get returns pending.ErrNotFound if no call has that id.
	Get(ctx context.Context, id int64) (pending.Call, error)
	// Approve needs a step-up for auth.ActionApproveCall naming the call's binding (else
	// auth.ErrStepUpRequired); a call that no longer waits is a *pending.NotPendingError, and
	// while locked pending.ErrLocked.
	Approve(ctx context.Context, id int64, proof auth.StepUp) (pending.Call, error)
	// Deny refuses a call; one that no longer waits is a *pending.NotPendingError.
	Deny(ctx context.Context, id int64, by string) (pending.Call, error)
}

// approvalTones are how each state of a pending call is shown; their words are
// pending.State.Words. TestEveryApprovalStateHasATone fails on a state without.
var approvalTones = enum.Table[pending.State, string]{
	{Member: pending.StatePending, Said: "attention"},
	{Member: pending.StateRunning, Said: "calm"},
	{Member: pending.StateRan, Said: "ok"},
	{Member: pending.StateDenied, Said: "calm"},
	{Member: pending.StateExpired, Said: "calm"},
	{Member: pending.StateVoid, Said: "calm"},
	{Member: pending.StateInterrupted, Said: "trouble"},
}

// maxOpenShown bounds the open calls the list shows; the rest are counted.
const maxOpenShown = 50

// approvalsPage is GET /approvals: the calls that wait, oldest first, then the recent ones, and
// the notifications card.
func (s *server) approvalsPage(w http.ResponseWriter, r *http.Request) error {
	list, err := s.approvalList(r.Context())
	if err != nil {
		return err
	}
	push, err := s.pushCard(r.Context(), "")
	if err != nil {
		return err
	}
	s.renderPage(w, r, http.StatusOK, views.PageApprovals, views.ApprovalsPage{
		Page: s.pageInfo(r, "Approvals", "approvals"), List: list, Push: push,
	})
	return nil
}

// approvalsListGet is the list's poll: the list, or 204 (htmx swaps nothing) while it shows
// what the page shows already (its version, "shown"), so a link is not swapped under a tap.
func (s *server) approvalsListGet(w http.ResponseWriter, r *http.Request) error {
	list, err := s.approvalList(r.Context())
	if err != nil {
		return err
	}
	if r.URL.Query().Get("shown") == list.Version {
		w.WriteHeader(http.StatusNoContent)
		return nil
	}
	s.renderPartial(w, r, http.StatusOK, views.PartialApprovalList, list)
	return nil
}

// approvalList is the list of calls as it is now.
func (s *server) approvalList(ctx context.Context) (views.ApprovalList, error) {
	l, err := s.approvals.Page(ctx, maxOpenShown)
	if err != nil {
		return views.ApprovalList{}, err
	}
	out := views.ApprovalList{MoreOpen: l.MoreOpen}
	version := sha256.New()
	for _, c := range l.Open {
		out.Open = append(out.Open, s.approvalCard(ctx, c, false))
		fmt.Fprintf(version, "%d %s %v %v\n", c.ID, c.State, c.Deliveries != nil, c.Delivered())
	}
	for _, c := range l.Recent {
		out.Recent = append(out.Recent, s.approvalCard(ctx, c, false))
		fmt.Fprintf(version, "%d %s\n", c.ID, c.State)
	}
	fmt.Fprintf(version, "%d", out.MoreOpen)
	out.Version = hex.EncodeToString(version.Sum(nil)[:8])
	return out, nil
}

// approvalPage is GET /approvals/{id}: one call, everything the owner approves, and its
// buttons.
func (s *server) approvalPage(w http.ResponseWriter, r *http.Request) error {
	c, err := s.approvalOf(r)
	if err != nil {
		return err
	}
	s.renderPage(w, r, http.StatusOK, views.PageApproval, views.ApprovalPage{
		Page: s.pageInfo(r, "Approve "+c.Tool, "approvals"), Call: s.approvalCard(r.Context(), c, true),
	})
	return nil
}

// approvalStatusGet is the poll of a call's page: its state and time left, or, once the state
// is no longer the one the page shows ("shown"), the whole call in its place.
func (s *server) approvalStatusGet(w http.ResponseWriter, r *http.Request) error {
	c, err := s.approvalOf(r)
	if err != nil {
		return err
	}
	card := s.approvalCard(r.Context(), c, true)
	if r.URL.Query().Get("shown") != string(c.State) {
		w.Header().Set(hxRetarget, "#approval-"+strconv.FormatInt(c.ID, 10))
		w.Header().Set(hxReswap, "outerHTML")
		s.renderPartial(w, r, http.StatusOK, views.PartialApprovalCall, card)
		return nil
	}
	s.renderPartial(w, r, http.StatusOK, views.PartialApprovalStatus, card)
	return nil
}

// approvalOf reads the call the route names.
func (s *server) approvalOf(r *http.Request) (pending.Call, error) {
	id, err := idParam(r)
	if err != nil {
		return pending.Call{}, err
	}
	return s.approvals.Get(r.Context(), id)
}

// callAsShown approves running the route's call as its page showed it: the form field
// "binding" is the call's pending.Binding when the page rendered it.
func callAsShown(w http.ResponseWriter, r *http.Request) (auth.Approval, error) {
	id, err := idParam(r)
	if err != nil {
		return auth.Approval{}, err
	}
	if err := readForm(w, r, maxJSONBody); err != nil {
		return auth.Approval{}, err
	}
	return auth.One(auth.ActionApproveCall, id, r.PostForm.Get("binding")), nil
}

// approvalApprovePost runs the call: requireStepUp has spent the session's grant for exactly
// this call as its page showed it, and the service checks that binding again against the call
// as stored, then runs it once (docs/design.md#rule-31). The answer is the call, with what its
// run gave; a call that no longer waits is shown as it is, saying so.
func (s *server) approvalApprovePost(w http.ResponseWriter, r *http.Request) error {
	id, err := idParam(r)
	if err != nil {
		return err
	}
	c, err := s.approvals.Approve(r.Context(), id, proofFrom(r.Context()))
	message := "Approved."
	switch c.State {
	case pending.StateRan:
		message = "Approved; it ran once. Its result is below."
	case pending.StateVoid:
		message = "Approved, but nothing ran: the tool changed just before it ran."
	}
	return s.decided(w, r, c, err, message)
}

// approvalDenyPost denies the call: nothing runs. It needs no step-up.
func (s *server) approvalDenyPost(w http.ResponseWriter, r *http.Request) error {
	id, err := idParam(r)
	if err != nil {
		return err
	}
	c, err := s.approvals.Deny(r.Context(), id, "owner")
	return s.decided(w, r, c, err, "Denied. Nothing ran.")
}

// decided answers an approval or a denial with the call as it is now, saying what the action
// did: a call that no longer waited says what became of it instead.
func (s *server) decided(w http.ResponseWriter, r *http.Request, c pending.Call, err error, message string) error {
	var np *pending.NotPendingError
	switch {
	case errors.As(err, &np):
		c, message = np.Call, "Nothing was done: this call "+np.Call.State.Words()+"."
	case err != nil:
		return err
	}
	if !isHTMX(r) {
		http.Redirect(w, r, "/approvals/"+strconv.FormatInt(c.ID, 10), http.StatusSeeOther)
		return nil
	}
	card := s.approvalCard(r.Context(), c, true)
	card.Message = message
	s.renderPartial(w, r, http.StatusOK, views.PartialApprovalCall, card)
	return nil
}

// approvalPrompt names the call a step-up approves, for its prompt, as its page showed it: a
// call that changed or no longer waits is refused before any passkey is asked for.
func (s *server) approvalPrompt(ctx context.Context, it auth.Item) (string, error) {
	c, err := s.approvals.Get(ctx, it.Target)
	if err != nil {
		return "", err
	}
	if c.State != pending.StatePending {
		return "", &pending.NotPendingError{Call: c}
	}
	if pending.Binding(c) != it.Digest {
		return "", errCallChanged
	}
	what := "“" + c.Tool + "”"
	if srv := c.Server(); srv != "" {
		what += " on MCP server “" + srv + "”"
	}
	return fmt.Sprintf("Confirm with your passkey to run %s once, for %s, with the arguments this page shows (approval %s).",
		what, c.Client.Name, shortDigest(it.Digest)), nil
}

// errCallChanged refuses a step-up for a call whose binding is not the one the page showed.
var errCallChanged = errors.New("the pending call is not as the page showed it")

// pendingProblem maps the errors of the pending calls.
func pendingProblem(err error) (problem, bool) {
	info := slog.LevelInfo
	var np *pending.NotPendingError
	switch {
	case errors.As(err, &np):
		return problem{http.StatusConflict, "This call no longer waits for your approval: it " + np.Call.State.Words() + ". Reload the page.", info}, true
	case errors.Is(err, pending.ErrNotFound):
		return problem{http.StatusNotFound, "That call does not exist, or was cleared from the list.", info}, true
	case errors.Is(err, pending.ErrLocked):
		return problem{http.StatusLocked, "Maven is locked: nothing runs until you unlock it. The call keeps waiting.", info}, true
	case errors.Is(err, errCallChanged):
		return problem{http.StatusConflict, "This page is out of date: reload it before you approve.", info}, true
	}
	return problem{}, false
}
