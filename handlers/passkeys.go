package handlers

import (
	"errors"
	"net/http"

	"maven/app/vault"
	"maven/views"
)

// errNoPRFOutput answers an enrollment whose authenticator gave no PRF result.
var errNoPRFOutput = errors.New("the authenticator returned no PRF output")

// passkeysPage is GET /passkeys: the page, or only the list for htmx.
func (s *server) passkeysPage(w http.ResponseWriter, r *http.Request) error {
	list, err := s.passkeyList(r)
	if err != nil {
		return err
	}
	s.render(w, r, http.StatusOK, views.PagePasskeys, views.PasskeysPage{
		Page: s.pageInfo(r, "Passkeys", "passkeys"), List: list,
	}, views.PartialPasskeyList, list)
	return nil
}

func (s *server) passkeyList(r *http.Request) (views.PasskeyList, error) {
	ps, err := s.auth.Passkeys(r.Context())
	if err != nil {
		return views.PasskeyList{}, err
	}
	current := ownerFrom(r.Context()).passkey
	list := views.PasskeyList{CanRemove: len(ps) > 1}
	open := !s.vault.Locked()
	for _, p := range ps {
		slot, err := s.vault.CanUnlock(r.Context(), p.CredentialID)
		if err != nil {
			return views.PasskeyList{}, err
		}
		row := views.PasskeyRow{
			ID: p.ID, Name: p.Name, Created: timeOf(p.CreatedAt), LastUsed: timeOf(p.LastUsedAt),
			CanUnlock: slot, Current: p.ID == current,
			Unlock: "can sign in, cannot unlock",
		}
		switch {
		case slot:
			row.Unlock = "can unlock"
		case p.CanUnlock():
			// PRF works, but the vault holds no key for it yet (or there is no vault yet).
			row.Unlock = "supports PRF, not set up to unlock yet"
			row.CanEnroll = open
		}
		list.Passkeys = append(list.Passkeys, row)
	}
	return list, nil
}

// passkeyAddBeginPost begins registering another passkey. requireStepUp has spent the
// session's add-passkey grant; the registration it begins is what the grant allowed.
func (s *server) passkeyAddBeginPost(w http.ResponseWriter, r *http.Request) error {
	if err := readEmpty(w, r); err != nil {
		return err
	}
	ctx := r.Context()
	opts, err := s.auth.BeginAddPasskey(ctx, ownerFrom(ctx).sid, origin(r), proofFrom(ctx))
	return sendOptions(w, opts, err)
}

// passkeyAddFinishPost stores the new passkey. Only a registration begun with a step-up is
// pending for this session, so this needs no grant of its own.
func (s *server) passkeyAddFinishPost(w http.ResponseWriter, r *http.Request) error {
	p, err := finishCreation(w, r, ownerFrom(r.Context()).sid, s.auth.FinishRegistration)
	if err != nil {
		return err
	}
	// A new passkey ends every other session; this one goes on.
	if err := s.reissue(w, r); err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, map[string]any{"ok": true, "id": p.ID, "prf": p.CanUnlock()})
	return nil
}

// passkeyRenamePost renames a passkey (form field "name").
func (s *server) passkeyRenamePost(w http.ResponseWriter, r *http.Request) error {
	id, err := idParam(r)
	if err != nil {
		return err
	}
	if err := readForm(w, r, maxJSONBody); err != nil {
		return err
	}
	p, err := s.auth.RenamePasskey(r.Context(), id, r.PostForm.Get("name"))
	if err != nil {
		return err
	}
	return s.passkeysChanged(w, r, "Renamed to “"+p.Name+"”.")
}

// passkeyRemovePost removes a passkey; requireStepUp has spent the grant for removing exactly
// this one, and auth refuses to remove the last. Removing the passkey this session signed in
// with ends the session.
func (s *server) passkeyRemovePost(w http.ResponseWriter, r *http.Request) error {
	id, err := idParam(r)
	if err != nil {
		return err
	}
	ctx := r.Context()
	p, err := s.auth.Passkey(ctx, id)
	if err != nil {
		return err
	}
	if err := s.auth.RemovePasskey(ctx, id, proofFrom(ctx)); err != nil {
		return err
	}
	// Its key slot goes too: a removed passkey must not unlock.
	if err := s.vault.ForgetPasskey(ctx, p.CredentialID); err != nil {
		return err
	}
	// A removed passkey ends every session; this one goes on, unless it signed in with it: then
	// the sign-in page says what happened and what to do.
	if id == ownerFrom(ctx).passkey {
		if err := s.endSession(ctx); err != nil {
			return err
		}
		sendTo(w, r, "/login?why="+whyPasskeyRemoved, http.StatusUnauthorized, "You removed the passkey you signed in with. Sign in with another.")
		return nil
	}
	if err := s.reissue(w, r); err != nil {
		return err
	}
	return s.passkeysChanged(w, r, "“"+p.Name+"” is removed: it can no longer sign in or unlock.")
}

// passkeysChanged answers a change to the passkeys: the list saying what changed for htmx, the
// page otherwise.
func (s *server) passkeysChanged(w http.ResponseWriter, r *http.Request, message string) error {
	return s.swapOrRedirect(w, r, "/passkeys", views.PartialPasskeyList, func() (any, error) {
		list, err := s.passkeyList(r)
		list.Message = message
		return list, err
	})
}

// enrollBeginPost begins the PRF assertion that lets passkey {id} unlock: right after it was
// registered (maven.js runs it when the registration said PRF is enabled, since authenticators
// rarely return a PRF result at creation), or later from the passkeys page.
func (s *server) enrollBeginPost(w http.ResponseWriter, r *http.Request) error {
	id, err := idParam(r)
	if err != nil {
		return err
	}
	if err := readEmpty(w, r); err != nil {
		return err
	}
	input, err := vault.NewPRFInput()
	if err != nil {
		return err
	}
	ctx := r.Context()
	opts, err := s.auth.BeginEnroll(ctx, ownerFrom(ctx).sid, origin(r), id, input)
	return sendOptions(w, opts, err)
}

// enrollFinishPost wraps the vault's data key for the passkey from its PRF output, creating
// the vault first when there is none; then the answer carries the recovery code, which
// maven.js shows this once.
func (s *server) enrollFinishPost(w http.ResponseWriter, r *http.Request) error {
	pa, err := finishAssertion(w, r, ownerFrom(r.Context()).sid, s.auth.FinishEnroll)
	defer clear(pa.Output)
	if err != nil {
		return err
	}
	if pa.Output == nil {
		return errNoPRFOutput
	}
	// A first enrolment makes the vault and this passkey's slot in one transaction: both, or
	// neither and an error.
	code, err := s.vault.Enroll(r.Context(), pa.Passkey.CredentialID, pa.Input, pa.Output)
	if err != nil {
		return err
	}
	answer := map[string]any{"ok": true, "id": pa.Passkey.ID}
	if code != "" {
		answer["recovery_code"] = code
	}
	writeJSON(w, http.StatusOK, answer)
	return nil
}
