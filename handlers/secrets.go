package handlers

import (
	"context"
	"net/http"
	"strings"

	"maven/app/activity"
	"maven/app/auth"
	"maven/app/vault"
	"maven/views"
)

// maxSecretForm bounds the set-secret form: a value may be up to vault.MaxSecretSize, form-encoded
// (up to three bytes per byte), plus the name.
const maxSecretForm = 3*vault.MaxSecretSize + 4<<10

// secretsPage is GET /secrets: the names of the sealed secrets (never their values), the form
// that sets one, and the recovery code card.
func (s *server) secretsPage(w http.ResponseWriter, r *http.Request) error {
	card, err := s.secretsCard(r)
	if err != nil {
		return err
	}
	used, err := s.vault.RecoveryUsed(r.Context())
	if err != nil {
		return err
	}
	s.render(w, r, http.StatusOK, views.PageSecrets, views.SecretsPage{
		Page: s.pageInfo(r, "Secrets", "secrets"), Card: card,
		Recovery: views.RecoveryCard{HasVault: s.vault.HasVault(), Used: used},
	}, views.PartialSecrets, card)
	return nil
}

// secretsCard lists every secret that is sealed or that the config refers to: which servers
// use each, and which are missing (the same list as `maven secret list`).
func (s *server) secretsCard(r *http.Request) (views.SecretsCard, error) {
	card := views.SecretsCard{HasVault: s.vault.HasVault()}
	_, uses, err := s.vault.Inventory(r.Context(), s.secretUsers())
	if err != nil {
		return card, err
	}
	for _, u := range uses {
		item := views.SecretItem{Name: u.Name, Servers: u.Servers, Sealed: u.Sealed != nil && *u.Sealed, Missing: u.Missing()}
		if item.Missing {
			card.Missing++
		}
		card.Secrets = append(card.Secrets, item)
	}
	return card, nil
}

// secretSetPost seals the value (form field "value") under the name the step-up approved
// (requireStepUp has spent the grant for that very name, and read the form). The vault tells
// the MCP manager, so a server waiting for the secret dials now, on its own goroutine.
func (s *server) secretSetPost(w http.ResponseWriter, r *http.Request) error {
	name, err := approvedSecret(r, auth.ActionSetSecret)
	if err != nil {
		return err
	}
	value := []byte(r.PostForm.Get("value"))
	defer clear(value)
	if err := s.vault.SetSecret(r.Context(), name, value); err != nil {
		return err
	}
	s.log.Info("secret set from the web", "name", name, "by", proofFrom(r.Context()).Owner())
	s.recordEvent(r.Context(), activity.ActionSecretSet, map[string]any{"secret": name})
	msg := "“" + name + "” is set and sealed."
	if users := s.secretUsers()[name]; len(users) > 0 {
		msg += " The servers that use it (" + strings.Join(users, ", ") + ") start with it now."
	}
	return s.secretsChanged(w, r, msg)
}

// secretNamed approves action on the secret the form names (field "name"): a secret has no id,
// so the item carries its name as the page showed it.
func secretNamed(action auth.Action) approvalOf {
	return func(w http.ResponseWriter, r *http.Request) (auth.Approval, error) {
		if err := readForm(w, r, maxSecretForm); err != nil {
			return auth.Approval{}, err
		}
		return auth.One(action, 0, r.PostForm.Get("name")), nil
	}
}

// approvedSecret is the name of the secret the request's step-up approved action on.
func approvedSecret(r *http.Request, action auth.Action) (string, error) {
	approval := proofFrom(r.Context()).Approval()
	if approval.Action != action || len(approval.Items) != 1 {
		return "", auth.ErrStepUpRequired
	}
	return approval.Items[0].Digest, nil
}

// secretDeletePost deletes the secret the step-up approved (requireStepUp has spent the grant
// for that very name). It asks first on the page, naming the servers that will stop, and needs
// the passkey: a deleted token stops servers the owner relies on.
func (s *server) secretDeletePost(w http.ResponseWriter, r *http.Request) error {
	name, err := approvedSecret(r, auth.ActionDeleteSecret)
	if err != nil {
		return err
	}
	if err := s.vault.DeleteSecret(r.Context(), name); err != nil {
		return err
	}
	s.log.Info("secret deleted from the web", "name", name, "by", proofFrom(r.Context()).Owner())
	s.recordEvent(r.Context(), activity.ActionSecretDeleted, map[string]any{"secret": name})
	return s.secretsChanged(w, r, "“"+name+"” is deleted.")
}

// secretsChanged answers a change to the secrets: the card saying what changed for htmx, the
// page otherwise.
func (s *server) secretsChanged(w http.ResponseWriter, r *http.Request, message string) error {
	return s.swapOrRedirect(w, r, "/secrets", views.PartialSecrets, func() (any, error) {
		card, err := s.secretsCard(r)
		card.Message = message
		return card, err
	})
}

// recoveryRotatePost makes a new recovery code and shows it this once; requireStepUp has spent
// the session's grant for it. The old code stops working at once.
func (s *server) recoveryRotatePost(w http.ResponseWriter, r *http.Request) error {
	code, err := s.vault.RegenerateRecovery(r.Context())
	if err != nil {
		return err
	}
	s.log.Info("recovery code replaced from the web", "by", proofFrom(r.Context()).Owner())
	s.recordEvent(r.Context(), activity.ActionRecoveryRotated, nil)
	rc := views.RecoveryCard{HasVault: true, Code: code}
	if isPartial(r) {
		s.renderPartial(w, r, http.StatusOK, views.PartialRecovery, rc)
		return nil
	}
	card, err := s.secretsCard(r)
	if err != nil {
		return err
	}
	s.renderPage(w, r, http.StatusOK, views.PageSecrets, views.SecretsPage{
		Page: s.pageInfo(r, "Secrets", "secrets"), Card: card, Recovery: rc,
	})
	return nil
}

// recordEvent appends the owner's security event to the activity feed: what changed, never a
// value. The change is made already, so a failure to record is logged, not answered.
func (s *server) recordEvent(ctx context.Context, action string, detail map[string]any) {
	if err := s.activity.Append(ctx, activity.Event{Actor: "owner", Action: action, Detail: detail}); err != nil {
		s.log.Error("record "+action, "err", err)
	}
}
