package allowlist

import (
	"context"
	"fmt"
	"strings"

	"maven/app/auth"
	"maven/internal/enum"
)

// Confirm is how a destructive row's voice calls are confirmed (docs/design.md#rule-32): by a
// spoken yes, or on the owner's phone, as a pending call approved with a passkey.
type Confirm string

// The ways of confirming.
const (
	// ConfirmVoice, the default: the reply asks, and the next turn's yes confirms
	// (docs/design.md#rule-18).
	ConfirmVoice Confirm = "voice"
	// ConfirmPhone: the turn becomes a pending call, approved only on the phone; meant for
	// locks, doors and alarms, where a yes anyone in the room can say is not enough.
	ConfirmPhone Confirm = "phone"
)

// confirms are the ways of confirming, in the order /tools offers them, with their words;
// TestEveryConfirmHasItsWords fails on one without (docs/style.md#enumerations).
var confirms = enum.Table[Confirm, string]{
	{Member: ConfirmVoice, Said: "by voice"},
	{Member: ConfirmPhone, Said: "on my phone"},
}

// Confirms returns the ways of confirming, in the order /tools offers them.
func Confirms() []Confirm { return confirms.Members() }

// Words are the way in words for the owner: "on my phone". A value this daemon does not know
// reads as it is stored.
func (c Confirm) Words() string {
	if w, ok := confirms.Of(c); ok {
		return w
	}
	return string(c)
}

// OnPhone reports whether the row's voice calls are confirmed on the phone: a destructive row
// set so (a row that is not destructive is never confirmed).
func (t Tool) OnPhone() bool { return t.Destructive && t.Confirm == ConfirmPhone }

// ConfirmDigest is what a step-up setting row's confirmation to c names: the setting and the
// row's shape as the page showed it ("phone sha256:…").
func ConfirmDigest(t Tool, c Confirm) string { return string(c) + " " + t.ApprovalDigest() }

// SetConfirm sets how an enabled destructive row's voice calls are confirmed. Only a step-up
// for auth.ActionSetConfirm on this row naming ConfirmDigest of the row as it is now and c can
// do it (else auth.ErrStepUpRequired, or a *ShapeChangedError for a row redefined since); a
// row that is not enabled and destructive, or a way that is not one, is ErrInvalid.
func (s *Service) SetConfirm(ctx context.Context, id int64, c Confirm, proof auth.StepUp) (t Tool, err error) {
	err = s.Update(ctx, func(tx *Tx) error {
		t, err = tx.SetConfirm(ctx, id, c, proof)
		return err
	})
	return t, err
}

// SetConfirm is Service.SetConfirm inside the transaction.
func (tx *Tx) SetConfirm(ctx context.Context, id int64, c Confirm, proof auth.StepUp) (Tool, error) {
	if _, ok := confirms.Of(c); !ok {
		return Tool{}, fmt.Errorf("%w: no way of confirming %q", ErrInvalid, c)
	}
	shown, ok := proof.Shown(auth.ActionSetConfirm, id)
	if !ok {
		return Tool{}, fmt.Errorf("set how tool %d is confirmed: %w", id, auth.ErrStepUpRequired)
	}
	t, err := tx.st.GetTool(ctx, id)
	if err != nil {
		return Tool{}, err
	}
	if shown != ConfirmDigest(t, c) {
		// The same setting shown on an older shape is the shape's change, said as such.
		if shape, ok := strings.CutPrefix(shown, string(c)+" "); ok {
			if err := CheckShown(t, shape); err != nil {
				return Tool{}, err
			}
		}
		return Tool{}, fmt.Errorf("set how tool %d is confirmed: %w", id, auth.ErrStepUpRequired)
	}
	if t.State != StateEnabled || !t.Destructive {
		return Tool{}, fmt.Errorf("%w: tool %d is not an enabled destructive row, and is never confirmed", ErrInvalid, id)
	}
	if t.Confirm == c {
		return t, nil
	}
	old := t
	t.Confirm = c
	return t, tx.save(ctx, &t, old, proof.Owner(), "confirm_set", map[string]any{"confirm": string(c), "was": string(old.Confirm)})
}
