package handlers

import (
	"errors"
	"net/http"
	"time"

	"maven/views"
)

// passkeysPage is GET /passkeys: the page, or only the list for htmx.
func (s *server) passkeysPage(w http.ResponseWriter, r *http.Request) {
	list, err := s.passkeyList(r)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	s.render(w, r, http.StatusOK, views.PagePasskeys, views.PasskeysPage{
		Page: s.pageInfo(r, "Passkeys", "passkeys"), List: list,
	}, views.PartialPasskeyList, list)
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
			ID: p.ID, Name: p.Name, Created: formatTime(p.CreatedAt),
			CreatedISO: p.CreatedAt.UTC().Format(time.RFC3339), CanUnlock: slot,
			Current: p.ID == current, LastUsed: "never",
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
		if !p.LastUsedAt.IsZero() {
			row.LastUsed = formatTime(p.LastUsedAt)
			row.LastUsedISO = p.LastUsedAt.UTC().Format(time.RFC3339)
		}
		list.Passkeys = append(list.Passkeys, row)
	}
	return list, nil
}

// passkeyAddBeginPost begins registering another passkey. requireStepUp has spent the
// session's add-passkey grant; the registration it begins is what the grant allowed.
func (s *server) passkeyAddBeginPost(w http.ResponseWriter, r *http.Request) {
	if err := readJSON(w, r, &struct{}{}); err != nil {
		s.fail(w, r, err)
		return
	}
	ctx := r.Context()
	creation, err := s.auth.BeginAddPasskey(ctx, ownerFrom(ctx).sid, origin(r), proofFrom(ctx))
	if err != nil {
		s.fail(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"options": creation})
}

// passkeyAddFinishPost stores the new passkey. Only a registration begun with a step-up is
// pending for this session, so this needs no grant of its own.
func (s *server) passkeyAddFinishPost(w http.ResponseWriter, r *http.Request) {
	var body finishBody
	if err := readJSON(w, r, &body); err != nil {
		s.fail(w, r, err)
		return
	}
	ctx := r.Context()
	resp, perr := parseCreation(body.Credential)
	p, err := s.auth.FinishRegistration(ctx, ownerFrom(ctx).sid, resp, body.Name)
	if err != nil {
		s.fail(w, r, errors.Join(err, perr))
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"ok": true, "id": p.ID, "prf": p.CanUnlock()})
}

// passkeyRenamePost renames a passkey (form field "name").
func (s *server) passkeyRenamePost(w http.ResponseWriter, r *http.Request) {
	id, err := idParam(r)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	r.Body = http.MaxBytesReader(w, r.Body, maxJSONBody)
	if err := r.ParseForm(); err != nil {
		s.fail(w, r, errors.Join(errBadRequest, err))
		return
	}
	if _, err := s.auth.RenamePasskey(r.Context(), id, r.PostForm.Get("name")); err != nil {
		s.fail(w, r, err)
		return
	}
	s.passkeysChanged(w, r)
}

// passkeyRemovePost removes a passkey; requireStepUp has spent the grant for removing exactly
// this one, and auth refuses to remove the last. Removing the passkey this session signed in
// with ends the session.
func (s *server) passkeyRemovePost(w http.ResponseWriter, r *http.Request) {
	id, err := idParam(r)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	ctx := r.Context()
	p, err := s.auth.Passkey(ctx, id)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	if err := s.auth.RemovePasskey(ctx, id, proofFrom(ctx)); err != nil {
		s.fail(w, r, err)
		return
	}
	// Its key slot goes too: a removed passkey must not unlock.
	if err := s.vault.ForgetPasskey(ctx, p.CredentialID); err != nil {
		s.fail(w, r, err)
		return
	}
	if id == ownerFrom(ctx).passkey {
		s.expire(w, r)
		return
	}
	s.passkeysChanged(w, r)
}

// passkeysChanged answers a change to the passkeys: the list for htmx, the page otherwise.
func (s *server) passkeysChanged(w http.ResponseWriter, r *http.Request) {
	if !isHTMX(r) {
		http.Redirect(w, r, "/passkeys", http.StatusSeeOther)
		return
	}
	list, err := s.passkeyList(r)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	s.renderPartial(w, r, http.StatusOK, views.PartialPasskeyList, list)
}
