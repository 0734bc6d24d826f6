package handlers

import (
	"context"
	"fmt"
	"net/http"

	"github.com/go-webauthn/webauthn/protocol"

	"maven/app/auth"
)

// stepUpBeginPost begins a step-up for the action and target maven.js names (the ones the 403
// that asked for it named). The prompt tells the owner what the passkey gesture will allow.
func (s *server) stepUpBeginPost(w http.ResponseWriter, r *http.Request) error {
	var body stepUpDetail
	if err := readJSON(w, r, &body); err != nil {
		return err
	}
	ctx := r.Context()
	prompt, err := s.stepUpPrompt(r, body)
	if err != nil {
		return err
	}
	opts, err := s.auth.BeginStepUp(ctx, ownerFrom(ctx).sid, origin(r), body.Action, body.ID)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, ceremonyStart{Options: opts, Prompt: prompt})
	return nil
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
func (s *server) stepUpFinishPost(w http.ResponseWriter, r *http.Request) error {
	ctx := r.Context()
	d, err := finishAssertion(w, r, ownerFrom(ctx).sid, func(ctx context.Context, sid string, resp *protocol.ParsedCredentialAssertionData) (stepUpDetail, error) {
		action, target, err := s.auth.FinishStepUp(ctx, sid, resp)
		return stepUpDetail{Action: action, ID: target}, err
	})
	if err != nil {
		return err
	}
	if err := s.sessions.RenewToken(ctx); err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, map[string]any{"ok": true, "action": d.Action, "id": d.ID})
	return nil
}
