package allowlist_test

import (
	"context"
	"errors"
	"testing"

	"maven/app/allowlist"
	"maven/app/auth"
	"maven/app/auth/authtest"
	"maven/internal/enumtest"
)

func TestEveryConfirmHasItsWords(t *testing.T) {
	enumtest.Listed(t, ".", "Confirm", allowlist.Confirms())
	for _, c := range allowlist.Confirms() {
		if c.Words() == string(c) || c.Words() == "" {
			t.Errorf("%q has no words", c)
		}
	}
}

// TestSettingHowARowIsConfirmedNeedsAStepUpNamingItAndTheShape: an enabled destructive row is
// set to confirm on the phone only with a step-up naming that setting and the row's shape as
// shown (docs/design.md#rule-32); a step-up for the other setting, for another row, or none
// changes nothing; a read-only row is never confirmed; the change is one event of the row.
func TestSettingHowARowIsConfirmedNeedsAStepUpNamingItAndTheShape(t *testing.T) {
	s, _ := newService(t)
	ctx := context.Background()
	door, _, err := s.ProposeTool(ctx, mcpProposal("home", "unlock_door", false))
	if err != nil {
		t.Fatal(err)
	}
	weather, _, err := s.ProposeTool(ctx, mcpProposal("home", "weather", true))
	if err != nil {
		t.Fatal(err)
	}
	toState(t, ctx, s, door.ID, allowlist.StateEnabled)
	toState(t, ctx, s, weather.ID, allowlist.StateEnabled)
	door, _ = s.Get(ctx, door.ID)
	if door.Confirm != allowlist.ConfirmVoice || door.OnPhone() {
		t.Fatalf("a new row confirms %q", door.Confirm)
	}
	proof := func(id int64, digest string) auth.StepUp {
		return authtest.Proof(t, auth.One(auth.ActionSetConfirm, id, digest))
	}
	for name, p := range map[string]auth.StepUp{
		"no step-up":           {},
		"the other setting":    proof(door.ID, allowlist.ConfirmDigest(door, allowlist.ConfirmVoice)),
		"another row":          proof(weather.ID, allowlist.ConfirmDigest(door, allowlist.ConfirmPhone)),
		"enabling the row":     authtest.Proof(t, auth.One(auth.ActionEnableTool, door.ID, allowlist.ConfirmDigest(door, allowlist.ConfirmPhone))),
		"an older shape shown": proof(door.ID, "phone sha256:0"),
	} {
		if _, err := s.SetConfirm(ctx, door.ID, allowlist.ConfirmPhone, p); err == nil {
			t.Errorf("%s set the row to confirm on the phone", name)
		}
	}
	var changed *allowlist.ShapeChangedError
	if _, err := s.SetConfirm(ctx, door.ID, allowlist.ConfirmPhone, proof(door.ID, "phone sha256:0")); !errors.As(err, &changed) {
		t.Errorf("an older shape shown: %v, want the shape's change", err)
	}
	got, err := s.SetConfirm(ctx, door.ID, allowlist.ConfirmPhone, proof(door.ID, allowlist.ConfirmDigest(door, allowlist.ConfirmPhone)))
	if err != nil || !got.OnPhone() {
		t.Fatalf("set to the phone: %+v %v", got, err)
	}
	if again, _ := s.Get(ctx, door.ID); !again.OnPhone() {
		t.Error("the setting was not stored")
	}
	if _, err := s.SetConfirm(ctx, weather.ID, allowlist.ConfirmPhone,
		proof(weather.ID, allowlist.ConfirmDigest(weather, allowlist.ConfirmPhone))); !errors.Is(err, allowlist.ErrInvalid) {
		t.Errorf("a read-only row set to confirm on the phone: %v", err)
	}
	events, err := s.Events(ctx, door.ID)
	if err != nil || events[len(events)-1].Action != "confirm_set" || string(events[len(events)-1].Detail) != `{"confirm":"phone","was":"voice"}` {
		t.Errorf("the row's last event %+v (%v)", events[len(events)-1], err)
	}
}
