package handlers

import (
	"context"
	"fmt"
	"net/http"
	"strings"

	"maven/app/auth"
)

// stepUpBeginPost begins a step-up for the approval maven.js names (the one the 403 that asked
// for it named: an action and its items, each with the fingerprint the page showed). The
// prompt tells the owner what the passkey gesture will approve.
func (s *server) stepUpBeginPost(w http.ResponseWriter, r *http.Request) error {
	var approval auth.Approval
	if err := readJSON(w, r, &approval); err != nil {
		return err
	}
	if err := approval.Validate(); err != nil {
		return err
	}
	ctx := r.Context()
	prompt, err := s.stepUpPrompt(ctx, approval)
	if err != nil {
		return err
	}
	opts, err := s.auth.BeginStepUp(ctx, ownerFrom(ctx).sid, origin(r), approval)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, ceremonyStart{Options: opts, Prompt: prompt})
	return nil
}

// stepUpPrompt says what a step-up approves, naming each tool, passkey or server and the
// fingerprint the page showed, and fails for a target that does not exist.
func (s *server) stepUpPrompt(ctx context.Context, a auth.Approval) (string, error) {
	if a.Action == auth.ActionApproveCall {
		// One call at a time: each is approved on its own page, as it shows it.
		if len(a.Items) != 1 {
			return "", fmt.Errorf("%w: approve %d calls at once", errBadRequest, len(a.Items))
		}
		return s.approvalPrompt(ctx, a.Items[0])
	}
	var names []string
	for _, it := range a.Items {
		name, err := s.targetName(ctx, a.Action, it)
		if err != nil {
			return "", err
		}
		names = append(names, name)
	}
	list := strings.Join(names, ", ")
	switch a.Action {
	case auth.ActionEnableTool:
		if len(names) == 1 {
			return fmt.Sprintf("Confirm with your passkey to enable %s exactly as this page shows it.", list), nil
		}
		return fmt.Sprintf("Confirm with your passkey to enable these %d tools exactly as this page shows them: %s.", len(names), list), nil
	case auth.ActionSetPhrases:
		return fmt.Sprintf("Confirm with your passkey to save these phrases for %s: voice will fill its arguments with the words you say in them.", list), nil
	case auth.ActionRemovePasskey:
		return fmt.Sprintf("Confirm with your passkey to remove the passkey %s.", list), nil
	case auth.ActionAddServer:
		return fmt.Sprintf("Confirm with your passkey to start the MCP server %s with the command line shown.", list), nil
	case auth.ActionAddPasskey:
		return "Confirm with a passkey you already have, then register the new one.", nil
	case auth.ActionSetSecret:
		return fmt.Sprintf("Confirm with your passkey to set the secret %s.", list), nil
	case auth.ActionDeleteSecret:
		return fmt.Sprintf("Confirm with your passkey to delete the secret %s.%s", list, s.stopping(a)), nil
	case auth.ActionRotateRecovery:
		return "Confirm with your passkey to make a new recovery code. The old one stops working.", nil
	case auth.ActionSignIn:
		return fmt.Sprintf("Confirm with your passkey to let Maven sign in to %s. What you grant there lets Maven act as you on that server.", list), nil
	case auth.ActionSetConfirm:
		return fmt.Sprintf("Confirm with your passkey to have voice calls of %s confirmed %s.", list, confirmOf(a.Items[0].Digest).Words()), nil
	case auth.ActionConsentClient, auth.ActionClientTools, auth.ActionSetLimits:
		return fmt.Sprintf("Confirm with your passkey to %s.", list), nil
	}
	return "", fmt.Errorf("%w: %q", auth.ErrUnknownAction, a.Action)
}

// targetName names one item of a step-up for its prompt: a tool with the fingerprint the page
// showed, a passkey, a server; "" for actions on nothing in particular.
func (s *server) targetName(ctx context.Context, action auth.Action, it auth.Item) (string, error) {
	switch action {
	case auth.ActionEnableTool, auth.ActionSetPhrases, auth.ActionSetConfirm:
		t, err := s.tools.Get(ctx, it.Target)
		if err != nil {
			return "", err
		}
		where := "a local command"
		if t.IsMCP() {
			where = fmt.Sprintf("from MCP server “%s”", t.Server())
		}
		digest := it.Digest
		if action == auth.ActionSetConfirm {
			_, digest, _ = strings.Cut(digest, " ")
		}
		return fmt.Sprintf("“%s” (%s, fingerprint %s)", t.Name, where, shortDigest(digest)), nil
	case auth.ActionRemovePasskey:
		p, err := s.auth.Passkey(ctx, it.Target)
		if err != nil {
			return "", err
		}
		return fmt.Sprintf("“%s”", p.Name), nil
	case auth.ActionAddServer:
		c, err := s.commands.Command(ctx, it.Target)
		if err != nil {
			return "", err
		}
		return fmt.Sprintf("“%s”", c.Server), nil
	case auth.ActionSetSecret, auth.ActionDeleteSecret:
		return fmt.Sprintf("“%s”", it.Digest), nil
	case auth.ActionSignIn:
		return s.signInTarget(it.Digest)
	case auth.ActionConsentClient, auth.ActionClientTools, auth.ActionSetLimits:
		return s.offers.words(it.Digest)
	}
	return "", nil
}

// stopping says which servers stop when the secrets a deletion names are gone.
func (s *server) stopping(a auth.Approval) string {
	var servers []string
	users := s.secretUsers()
	for _, it := range a.Items {
		servers = append(servers, users[it.Digest]...)
	}
	if len(servers) == 0 {
		return ""
	}
	return " These servers stop until it is set again: " + strings.Join(servers, ", ") + "."
}

// shortDigest is the start of a fingerprint, enough for a person to compare.
func shortDigest(d string) string {
	const keep = len("sha256:") + 12
	if len(d) <= keep {
		return d
	}
	return d[:keep] + "…"
}

// stepUpFinishPost verifies the step-up. The session then holds a grant for exactly the
// approval it was begun for, and gets a new token.
func (s *server) stepUpFinishPost(w http.ResponseWriter, r *http.Request) error {
	ctx := r.Context()
	approval, err := finishAssertion(w, r, ownerFrom(ctx).sid, s.auth.FinishStepUp)
	if err != nil {
		return err
	}
	if err := s.sessions.RenewToken(ctx); err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, map[string]any{"ok": true, "approved": approval})
	return nil
}
