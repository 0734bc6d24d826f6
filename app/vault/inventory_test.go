package vault_test

import (
	"context"
	"fmt"
	"testing"

	"maven/app/vault"
)

// Inventory joins what is sealed with what the config refers to: which servers use each secret
// and which are missing; while locked, whether any is sealed is not known.
func TestInventory(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t)
	g, _ := newGate(t, f.v)
	users := map[string][]string{"vikunja_token": {"vikunja"}, "ha_token": {"homeassistant", "lights"}}
	show := func(uses []vault.SecretUse) string {
		s := ""
		for _, u := range uses {
			sealed := "?"
			if u.Sealed != nil {
				sealed = fmt.Sprint(*u.Sealed)
			}
			s += fmt.Sprintf("%s:%s:%v:%v ", u.Name, sealed, u.Servers, u.Missing())
		}
		return s
	}
	// No vault: nothing is sealed, so both are missing.
	locked, uses, err := g.Inventory(ctx, users)
	if err != nil || locked || show(uses) != "ha_token:false:[homeassistant lights]:true vikunja_token:false:[vikunja]:true " {
		t.Fatalf("no vault: %v %v %q", locked, err, show(uses))
	}
	p := newPasskey(t, "cred-1")
	if _, err := g.Enroll(ctx, p.id, p.input, p.output); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"vikunja_token", "spare"} {
		if err := g.SetSecret(ctx, name, []byte("x")); err != nil {
			t.Fatal(err)
		}
	}
	_, uses, err = g.Inventory(ctx, users)
	if err != nil || show(uses) != "ha_token:false:[homeassistant lights]:true spare:true:[]:false vikunja_token:true:[vikunja]:false " {
		t.Fatalf("unlocked: %v %q", err, show(uses))
	}
	g.Lock()
	locked, uses, err = g.Inventory(ctx, users)
	if err != nil || !locked || show(uses) != "ha_token:?:[homeassistant lights]:false vikunja_token:?:[vikunja]:false " {
		t.Fatalf("locked: %v %v %q", locked, err, show(uses))
	}
}
