package handlers

import (
	"errors"
	"fmt"
	"net/http"

	"maven/app/auth"
)

// stepUpBeginPost begins a step-up for the action and target maven.js names (the ones the 403
// that asked for it named). The prompt tells the owner what the passkey gesture will allow.
func (s *server) stepUpBeginPost(w http.ResponseWriter, r *http.Request) {
	var body stepUpDetail
	if err := readJSON(w, r, &body); err != nil {
		s.fail(w, r, err)
		return
	}
	ctx := r.Context()
	prompt, err := s.stepUpPrompt(r, body)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	assertion, err := s.auth.BeginStepUp(ctx, ownerFrom(ctx).sid, origin(r), body.Action, body.ID)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"options": assertion, "prompt": prompt})
}

// stepUpPrompt says what a step-up is for, naming the tool or passkey, and fails for a target
// that does not exist.
func (s *server) stepUpPrompt(r *http.Request, d stepUpDetail) (string, error) {
	switch d.Action {
	case auth.ActionEnableTool:
		t, err := s.tools.Get(r.Context(), d.ID)
		if err != nil {
			return "", err
		}
		return fmt.Sprintf("Confirm with your passkey to enable “%s”.", t.Name), nil
	case auth.ActionRemovePasskey:
		p, err := s.auth.Passkey(r.Context(), d.ID)
		if err != nil {
			return "", err
		}
		return fmt.Sprintf("Confirm with your passkey to remove the passkey “%s”.", p.Name), nil
	case auth.ActionAddServer:
		if s.commands == nil {
			return "", errNoPage
		}
		c, err := s.commands.Command(r.Context(), d.ID)
		if err != nil {
			return "", err
		}
		return fmt.Sprintf("Confirm with your passkey to start the MCP server “%s” with the command line shown.", c.Server), nil
	case auth.ActionAddPasskey:
		return "Confirm with a passkey you already have, then register the new one.", nil
	case auth.ActionSetSecret:
		return "Confirm with your passkey to set the secret.", nil
	case auth.ActionRotateRecovery:
		return "Confirm with your passkey to make a new recovery code. The old one stops working.", nil
	}
	return "", fmt.Errorf("%w: %q", auth.ErrUnknownAction, d.Action)
}

// stepUpFinishPost verifies the step-up. The session then holds a grant for exactly the action
// and target it was begun for, and gets a new token.
func (s *server) stepUpFinishPost(w http.ResponseWriter, r *http.Request) {
	var body finishBody
	if err := readJSON(w, r, &body); err != nil {
		s.fail(w, r, err)
		return
	}
	ctx := r.Context()
	resp, perr := parseAssertion(body.Credential)
	action, target, err := s.auth.FinishStepUp(ctx, ownerFrom(ctx).sid, resp)
	if err != nil {
		s.fail(w, r, errors.Join(err, perr))
		return
	}
	if err := s.sessions.RenewToken(ctx); err != nil {
		s.fail(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"ok": true, "action": action, "id": target})
}
