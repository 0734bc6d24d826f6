package handlers

import (
	"errors"
	"net/http"

	"maven/app/vault"
	"maven/views"
)

// maxSecretForm bounds the set-secret form: a value may be up to vault.MaxSecretSize, form-encoded
// (up to three bytes per byte), plus the name.
const maxSecretForm = 3*vault.MaxSecretSize + 4<<10

// errNoPRFOutput answers an enrollment whose authenticator gave no PRF result.
var errNoPRFOutput = errors.New("the authenticator returned no PRF output")

// secretsPage is GET /secrets: the names of the sealed secrets (never their values), the form
// that sets one, and the recovery code card.
func (s *server) secretsPage(w http.ResponseWriter, r *http.Request) {
	card, err := s.secretsCard(r)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	used, err := s.vault.RecoveryUsed(r.Context())
	if err != nil {
		s.fail(w, r, err)
		return
	}
	s.render(w, r, http.StatusOK, views.PageSecrets, views.SecretsPage{
		Page: s.pageInfo(r, "Secrets", "secrets"), Card: card,
		Recovery: views.RecoveryCard{HasVault: s.vault.HasVault(), Used: used},
	}, views.PartialSecrets, card)
}

func (s *server) secretsCard(r *http.Request) (views.SecretsCard, error) {
	card := views.SecretsCard{HasVault: s.vault.HasVault()}
	if !card.HasVault {
		return card, nil
	}
	names, err := s.vault.SecretNames(r.Context())
	if err != nil {
		return card, err
	}
	card.Names = names
	return card, nil
}

// secretSetPost seals a secret (form fields "name" and "value"); requireStepUp has spent the
// session's grant for it. The vault tells the MCP manager, so a server waiting for the secret
// dials now, on its own goroutine.
func (s *server) secretSetPost(w http.ResponseWriter, r *http.Request) {
	r.Body = http.MaxBytesReader(w, r.Body, maxSecretForm)
	if err := r.ParseForm(); err != nil {
		s.fail(w, r, errors.Join(errBadRequest, err))
		return
	}
	value := []byte(r.PostForm.Get("value"))
	defer clear(value)
	name := r.PostForm.Get("name")
	if err := s.vault.SetSecret(r.Context(), name, value); err != nil {
		s.fail(w, r, err)
		return
	}
	s.log.Info("secret set from the web", "name", name, "by", proofFrom(r.Context()).Owner())
	s.secretsChanged(w, r)
}

// secretDeletePost removes a secret (form field "name"). Like disabling a tool it only takes
// power away, so it needs no step-up.
func (s *server) secretDeletePost(w http.ResponseWriter, r *http.Request) {
	r.Body = http.MaxBytesReader(w, r.Body, maxJSONBody)
	if err := r.ParseForm(); err != nil {
		s.fail(w, r, errors.Join(errBadRequest, err))
		return
	}
	if err := s.vault.DeleteSecret(r.Context(), r.PostForm.Get("name")); err != nil {
		s.fail(w, r, err)
		return
	}
	s.secretsChanged(w, r)
}

// secretsChanged answers a change to the secrets: the card for htmx, the page otherwise.
func (s *server) secretsChanged(w http.ResponseWriter, r *http.Request) {
	if !isHTMX(r) {
		http.Redirect(w, r, "/secrets", http.StatusSeeOther)
		return
	}
	card, err := s.secretsCard(r)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	s.renderPartial(w, r, http.StatusOK, views.PartialSecrets, card)
}

// recoveryRotatePost makes a new recovery code and shows it this once; requireStepUp has spent
// the session's grant for it. The old code stops working at once.
func (s *server) recoveryRotatePost(w http.ResponseWriter, r *http.Request) {
	code, err := s.vault.RegenerateRecovery(r.Context())
	if err != nil {
		s.fail(w, r, err)
		return
	}
	s.log.Info("recovery code replaced from the web", "by", proofFrom(r.Context()).Owner())
	rc := views.RecoveryCard{HasVault: true, Code: code}
	if isPartial(r) {
		s.renderPartial(w, r, http.StatusOK, views.PartialRecovery, rc)
		return
	}
	card, err := s.secretsCard(r)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	s.renderPage(w, r, http.StatusOK, views.PageSecrets, views.SecretsPage{
		Page: s.pageInfo(r, "Secrets", "secrets"), Card: card, Recovery: rc,
	})
}

// enrollBeginPost begins the PRF assertion that lets passkey {id} unlock: right after it was
// registered (maven.js runs it when the registration said PRF is enabled, since authenticators
// rarely return a PRF result at creation), or later from the passkeys page.
func (s *server) enrollBeginPost(w http.ResponseWriter, r *http.Request) {
	id, err := idParam(r)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	if err := readJSON(w, r, &struct{}{}); err != nil {
		s.fail(w, r, err)
		return
	}
	input, err := vault.NewPRFInput()
	if err != nil {
		s.fail(w, r, err)
		return
	}
	ctx := r.Context()
	assertion, err := s.auth.BeginEnroll(ctx, ownerFrom(ctx).sid, origin(r), id, input)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"options": assertion})
}

// enrollFinishPost wraps the vault's data key for the passkey from its PRF output, creating
// the vault first when there is none; then the answer carries the recovery code, which
// maven.js shows this once.
func (s *server) enrollFinishPost(w http.ResponseWriter, r *http.Request) {
	var body finishBody
	if err := readJSON(w, r, &body); err != nil {
		s.fail(w, r, err)
		return
	}
	ctx := r.Context()
	resp, perr := parseAssertion(body.Credential)
	pa, err := s.auth.FinishEnroll(ctx, ownerFrom(ctx).sid, resp)
	defer clear(pa.Output)
	if err != nil {
		s.fail(w, r, errors.Join(err, perr))
		return
	}
	if pa.Output == nil {
		s.fail(w, r, errNoPRFOutput)
		return
	}
	code, err := s.vault.Enroll(ctx, pa.Passkey.CredentialID, pa.Input, pa.Output)
	if err != nil && code == "" {
		s.fail(w, r, err)
		return
	}
	answer := map[string]any{"ok": err == nil, "id": pa.Passkey.ID}
	if err != nil {
		// The vault exists but this passkey's slot was not stored: the code is the only way in.
		s.log.Error("vault created but the passkey could not be enrolled", "passkey", pa.Passkey.ID, "err", err)
		answer["error"] = "Maven made its vault but could not let this passkey unlock it. Keep the recovery code, then try “Let it unlock” on the Passkeys page."
	}
	if code != "" {
		answer["recovery_code"] = code
	}
	writeJSON(w, http.StatusOK, answer)
}
