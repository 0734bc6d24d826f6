package handlers_test

import (
	"encoding/json"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"maven/app/auth"
	"maven/app/auth/authtest"
)

// addPasskey runs the add-passkey journey as maven.js does: begin (refused, asking for a step-up),
// step-up with the current passkey, begin again, register with the new authenticator, finish.
func (b *browser) addPasskey(current, added *authtest.Authenticator, name string) *finishAnswer {
	t := b.f.t
	t.Helper()
	var first beginAnswer
	if r := b.postJSON("/passkeys/add/begin", map[string]any{}, &first); r.Code != http.StatusForbidden || first.StepUp == nil || first.StepUp.Action != "add_passkey" {
		t.Fatalf("add begin without step-up: %d %+v", r.Code, first)
	}
	b.mustStepUp(current, auth.One(auth.ActionAddPasskey, 0, ""))
	var begin beginAnswer
	mustOK(t, "add begin", b.postJSON("/passkeys/add/begin", map[string]any{}, &begin))
	cred, err := added.Create(begin.Options)
	if err != nil {
		t.Fatal(err)
	}
	var fin finishAnswer
	mustOK(t, "add finish", b.postJSON("/passkeys/add/finish", map[string]any{"name": name, "credential": json.RawMessage(cred)}, &fin))
	return &fin
}

func TestPasskeysListAddRenameRemove(t *testing.T) {
	f := newFixture(t)
	laptop := authtest.New(testOrigin)
	b := f.signUp(laptop)

	body := b.get("/passkeys").Body.String()
	// PRF works, but this fixture has no vault to hold a key for it.
	if !strings.Contains(body, "Laptop") || !strings.Contains(body, "supports PRF, not set up to unlock yet") || strings.Contains(body, ">Remove</button>") {
		t.Fatalf("passkeys page with one passkey:\n%s", body)
	}

	phone := authtest.New(testOrigin)
	phone.PRF = nil // answers nothing to the PRF probe
	b.addPasskey(laptop, phone, "Phone")
	body = b.htmx(http.MethodGet, "/passkeys", nil).Body.String()
	if !strings.Contains(body, "Phone") || !strings.Contains(body, "can sign in, cannot unlock") || strings.Count(body, ">Remove</button>") != 2 {
		t.Fatalf("passkeys list with two:\n%s", body)
	}
	// The new passkey signs in.
	mustOK(t, "login with the new passkey", f.browser().login(phone))

	// Rename needs no step-up; hidden characters in a name are refused.
	r := b.htmx(http.MethodPost, "/passkeys/2/rename", url.Values{"name": {"Old phone"}})
	if r.Code != http.StatusOK || !strings.Contains(r.Body.String(), "Old phone") {
		t.Fatalf("rename: %d %s", r.Code, r.Body.String())
	}
	if r := b.htmx(http.MethodPost, "/passkeys/2/rename", url.Values{"name": {"Phone\u202e"}}); r.Code != http.StatusUnprocessableEntity {
		t.Fatalf("rename with a bidi control: %d", r.Code)
	}

	// Remove needs a step-up for that very passkey.
	r = b.htmx(http.MethodPost, "/passkeys/2/remove", url.Values{})
	if r.Code != http.StatusForbidden {
		t.Fatalf("remove without step-up: %d", r.Code)
	}
	if got := stepUpTrigger(t, r.Header()); !got.Same(auth.One(auth.ActionRemovePasskey, 2, "")) {
		t.Fatalf("trigger %+v", got)
	}
	b.mustStepUp(laptop, auth.One(auth.ActionRemovePasskey, 2, ""))
	r = b.htmx(http.MethodPost, "/passkeys/2/remove", url.Values{})
	// The list no longer holds it, and says so.
	if r.Code != http.StatusOK || strings.Contains(r.Body.String(), `data-passkey-name="Old phone"`) ||
		!strings.Contains(r.Body.String(), "“Old phone” is removed: it can no longer sign in or unlock.") {
		t.Fatalf("remove: %d %s", r.Code, r.Body.String())
	}
	if ps, _ := f.auth.Passkeys(t.Context()); len(ps) != 1 {
		t.Fatalf("passkeys after remove: %d", len(ps))
	}
	// The removed passkey no longer signs in.
	lb := f.browser()
	var begin beginAnswer
	mustOK(t, "begin", lb.postJSON("/login/begin", map[string]string{}, &begin))
	cred, _ := phone.Get(begin.Options)
	if r := lb.postJSON("/login/finish", map[string]any{"credential": json.RawMessage(cred)}, nil); r.Code != http.StatusBadRequest {
		t.Fatalf("removed passkey signed in: %d", r.Code)
	}
}

func TestLastPasskeyIsNeverRemoved(t *testing.T) {
	f := newFixture(t)
	a := authtest.New(testOrigin)
	b := f.signUp(a)
	b.mustStepUp(a, auth.One(auth.ActionRemovePasskey, 1, ""))
	r := b.htmx(http.MethodPost, "/passkeys/1/remove", url.Values{})
	if r.Code != http.StatusConflict || !strings.Contains(r.Body.String(), "only passkey") || r.Header().Get("HX-Retarget") != "#flash" {
		t.Fatalf("removing the last passkey: %d %v %s", r.Code, r.Header(), r.Body.String())
	}
	if ps, _ := f.auth.Passkeys(t.Context()); len(ps) != 1 {
		t.Fatal("the last passkey was removed")
	}
}

func TestRemovingTheSessionsPasskeySignsOut(t *testing.T) {
	f := newFixture(t)
	laptop, phone := authtest.New(testOrigin), authtest.New(testOrigin)
	b := f.signUp(laptop)
	b.addPasskey(laptop, phone, "Phone")
	other := f.browser()
	mustOK(t, "login with phone", other.login(phone))

	b.mustStepUp(laptop, auth.One(auth.ActionRemovePasskey, 2, ""))
	mustOK(t, "remove phone", b.htmx(http.MethodPost, "/passkeys/2/remove", url.Values{}))
	if r := other.get("/tools"); r.Code != http.StatusSeeOther {
		t.Fatalf("a session of a removed passkey still works: %d", r.Code)
	}
}

func TestAddPasskeyExcludesRegisteredOnes(t *testing.T) {
	f := newFixture(t)
	a := authtest.New(testOrigin)
	b := f.signUp(a)
	b.mustStepUp(a, auth.One(auth.ActionAddPasskey, 0, ""))
	var begin beginAnswer
	mustOK(t, "begin", b.postJSON("/passkeys/add/begin", map[string]any{}, &begin))
	if _, err := a.Create(begin.Options); err != authtest.ErrExcluded {
		t.Fatalf("the registered authenticator was not excluded: %v", err)
	}
}
