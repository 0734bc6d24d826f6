package auth

import (
	"context"
	"errors"
	"fmt"

	"maven/app/activity"
)

// Passkeys returns the owner's passkeys, oldest first.
func (s *Service) Passkeys(ctx context.Context) ([]Passkey, error) {
	return s.store.Passkeys(ctx)
}

// Passkey returns one passkey, or ErrPasskeyNotFound.
func (s *Service) Passkey(ctx context.Context, id int64) (Passkey, error) {
	return s.store.Passkey(ctx, id)
}

// HasPasskeys reports whether any passkey is registered; until one is, only a setup link helps.
func (s *Service) HasPasskeys(ctx context.Context) (bool, error) {
	ps, err := s.store.Passkeys(ctx)
	if err != nil {
		return false, err
	}
	return len(ps) > 0, nil
}

// PasskeyExists reports whether the passkey is still registered. A session signed in with a
// passkey that was since removed is no longer valid.
func (s *Service) PasskeyExists(ctx context.Context, id int64) (bool, error) {
	_, err := s.store.Passkey(ctx, id)
	if errors.Is(err, ErrPasskeyNotFound) {
		return false, nil
	}
	return err == nil, err
}

// RenamePasskey gives a passkey a new name (1 to MaxPasskeyNameLen visible characters). Renaming
// changes no power, so it needs no step-up.
func (s *Service) RenamePasskey(ctx context.Context, id int64, name string) (Passkey, error) {
	name, err := cleanName(name)
	if err != nil {
		return Passkey{}, err
	}
	if name == "" {
		return Passkey{}, fmt.Errorf("%w: a name is required", ErrInvalidName)
	}
	old, err := s.store.Passkey(ctx, id)
	if err != nil {
		return Passkey{}, err
	}
	if err := s.store.RenamePasskey(ctx, id, name); err != nil {
		return Passkey{}, err
	}
	if old.Name != name {
		s.recordEvent(ctx, "owner", activity.ActionPasskeyRenamed, map[string]any{"passkey": id, "passkey_name": name, "old_name": old.Name})
	}
	return s.store.Passkey(ctx, id)
}

// RemovePasskey removes a passkey; proof must be a step-up for removing exactly this one. The
// last passkey is never removed (ErrLastPasskey), checked atomically by the store.
func (s *Service) RemovePasskey(ctx context.Context, id int64, proof StepUp) error {
	if !proof.Approves(ActionRemovePasskey, Item{Target: id}) {
		return ErrStepUpRequired
	}
	p, err := s.store.Passkey(ctx, id)
	if err != nil {
		return err
	}
	if err := s.store.DeletePasskey(ctx, id); err != nil {
		return err
	}
	s.passkeySets.Add(1)
	s.log.Info("passkey removed", "passkey", id, "by", proof.Owner())
	s.recordEvent(ctx, "owner", activity.ActionPasskeyRemoved, map[string]any{"passkey": id, "passkey_name": p.Name,
		"credential": credentialLabel(p.CredentialID)})
	return nil
}
