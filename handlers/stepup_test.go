package handlers_test

import (
	"bytes"
	"encoding/json"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"maven/app/allowlist"
	"maven/app/auth"
	"maven/app/auth/authtest"
)

// stepUpTrigger decodes the HX-Trigger of a step-up refusal.
func stepUpTrigger(t *testing.T, h http.Header) (string, int64) {
	t.Helper()
	var trig map[string]struct {
		Action string `json:"action"`
		ID     int64  `json:"id"`
	}
	if err := json.Unmarshal([]byte(h.Get("HX-Trigger")), &trig); err != nil {
		t.Fatalf("HX-Trigger %q: %v", h.Get("HX-Trigger"), err)
	}
	d, ok := trig["maven:step-up"]
	if !ok {
		t.Fatalf("HX-Trigger %q has no maven:step-up", h.Get("HX-Trigger"))
	}
	return d.Action, d.ID
}

func eventCount(t *testing.T, f *fixture, id int64) int {
	t.Helper()
	evs, err := f.tools.Events(t.Context(), id)
	if err != nil {
		t.Fatal(err)
	}
	return len(evs)
}

func TestEnableNeedsStepUpThenSucceeds(t *testing.T) {
	f := newFixture(t)
	a := authtest.New(testOrigin)
	b := f.signUp(a)
	tool := f.propose("restart_router")

	r := b.enable(tool.ID)
	if r.Code != http.StatusForbidden {
		t.Fatalf("enable without step-up: %d", r.Code)
	}
	if action, id := stepUpTrigger(t, r.Header()); action != "enable_tool" || id != tool.ID {
		t.Fatalf("trigger: %s %d", action, id)
	}
	if r.Header().Get("HX-Reswap") != "none" {
		t.Fatalf("a refused enable must swap nothing: %v", r.Header())
	}
	if f.state(tool.ID) != allowlist.StateProposed {
		t.Fatal("enabled without step-up")
	}

	begin := b.beginStepUp(auth.ActionEnableTool, tool.ID)
	if !strings.Contains(begin.Prompt, "restart_router") {
		t.Fatalf("prompt does not name the tool: %q", begin.Prompt)
	}
	var opts struct {
		PublicKey struct {
			AllowCredentials []json.RawMessage `json:"allowCredentials"`
			UserVerification string            `json:"userVerification"`
		} `json:"publicKey"`
	}
	if err := json.Unmarshal(begin.Options, &opts); err != nil || len(opts.PublicKey.AllowCredentials) != 1 || opts.PublicKey.UserVerification != "required" {
		t.Fatalf("step-up options: %v %s", err, begin.Options)
	}
	cookieBefore := b.cookies["maven_session"].Value
	cred, err := a.Get(begin.Options)
	if err != nil {
		t.Fatal(err)
	}
	mustOK(t, "finish", b.postJSON("/step-up/finish", map[string]any{"credential": jsonRaw(cred)}, nil))
	if b.cookies["maven_session"].Value == cookieBefore {
		t.Fatal("session token not renewed on step-up")
	}

	r = b.enable(tool.ID)
	if r.Code != http.StatusOK {
		t.Fatalf("enable after step-up: %d %s", r.Code, r.Body.String())
	}
	body := r.Body.String()
	if !strings.Contains(body, `id="tool-`+itoa(tool.ID)+`"`) || !strings.Contains(body, `data-state="enabled"`) || strings.Contains(body, "<html") {
		t.Fatalf("enable should answer the row alone:\n%s", body)
	}
	got, _ := f.tools.Get(t.Context(), tool.ID)
	if got.State != allowlist.StateEnabled || !strings.HasPrefix(got.EnabledBy, "owner") {
		t.Fatalf("row after enable: %+v", got)
	}

	// The grant was spent: after a disable, enabling again asks again.
	mustOK(t, "disable", b.htmx(http.MethodPost, "/tools/"+itoa(tool.ID)+"/disable", url.Values{}))
	if r := b.enable(tool.ID); r.Code != http.StatusForbidden {
		t.Fatalf("second enable reused the step-up: %d", r.Code)
	}
}

func TestStepUpWithoutUserVerificationIsRefused(t *testing.T) {
	f := newFixture(t)
	a := authtest.New(testOrigin)
	b := f.signUp(a)
	tool := f.propose("restart_router")

	a.UV = false
	_, r := b.stepUp(a, auth.ActionEnableTool, tool.ID)
	var ans finishAnswer
	_ = json.Unmarshal(r.Body.Bytes(), &ans)
	if r.Code != http.StatusBadRequest || !strings.Contains(ans.Error, "did not verify you") {
		t.Fatalf("step-up without UV: %d %s", r.Code, r.Body.String())
	}
	if r := b.enable(tool.ID); r.Code != http.StatusForbidden {
		t.Fatalf("enable after a refused step-up: %d", r.Code)
	}
	if f.state(tool.ID) != allowlist.StateProposed {
		t.Fatal("row left proposed state")
	}
}

func TestStepUpUVIsReadFromThisCeremony(t *testing.T) {
	// The stored credential has UV latched from registration and login; a step-up without UV
	// must still fail.
	f := newFixture(t)
	a := authtest.New(testOrigin)
	b := f.signUp(a)
	mustOK(t, "login", f.browser().login(a))
	tool := f.propose("restart_router")
	a.UV = false
	if _, r := b.stepUp(a, auth.ActionEnableTool, tool.ID); r.Code != http.StatusBadRequest {
		t.Fatalf("step-up without UV on a UV-latched credential: %d", r.Code)
	}
}

func TestStepUpForOneToolCannotEnableAnother(t *testing.T) {
	f := newFixture(t)
	a := authtest.New(testOrigin)
	b := f.signUp(a)
	toolA, toolB := f.propose("tool_a"), f.propose("tool_b")

	_, r := b.stepUp(a, auth.ActionEnableTool, toolA.ID)
	mustOK(t, "step-up for A", r)
	r = b.enable(toolB.ID)
	if r.Code != http.StatusForbidden {
		t.Fatalf("enable B with A's step-up: %d", r.Code)
	}
	if action, id := stepUpTrigger(t, r.Header()); action != "enable_tool" || id != toolB.ID {
		t.Fatalf("trigger names %s %d", action, id)
	}
	if f.state(toolB.ID) != allowlist.StateProposed {
		t.Fatal("B enabled")
	}
	mustOK(t, "enable A", b.enable(toolA.ID))
	if f.state(toolA.ID) != allowlist.StateEnabled {
		t.Fatal("A not enabled")
	}
}

func TestStepUpForAnotherActionCannotEnable(t *testing.T) {
	f := newFixture(t)
	a := authtest.New(testOrigin)
	b := f.signUp(a)
	tool := f.propose("restart_router")
	// A step-up for removing passkey 1 is no step-up for enabling tool 1.
	_, r := b.stepUp(a, auth.ActionRemovePasskey, 1)
	mustOK(t, "step-up", r)
	if tool.ID != 1 {
		t.Fatalf("want tool 1, got %d", tool.ID)
	}
	if r := b.enable(tool.ID); r.Code != http.StatusForbidden {
		t.Fatalf("enable with a remove-passkey step-up: %d", r.Code)
	}
}

func TestStepUpReplayIsRefused(t *testing.T) {
	f := newFixture(t)
	a := authtest.New(testOrigin)
	b := f.signUp(a)
	tool := f.propose("restart_router")

	body, r := b.stepUp(a, auth.ActionEnableTool, tool.ID)
	mustOK(t, "finish", r)
	replay := b.do(http.MethodPost, "/step-up/finish", bytes.NewReader(body), http.Header{
		"Content-Type": {"application/json"}, "Accept": {"application/json"},
	})
	if replay.Code != http.StatusBadRequest {
		t.Fatalf("replayed finish: %d %s", replay.Code, replay.Body.String())
	}
}

func TestStepUpFailureConsumesTheCeremony(t *testing.T) {
	f := newFixture(t)
	a := authtest.New(testOrigin)
	b := f.signUp(a)
	tool := f.propose("restart_router")

	begin := b.beginStepUp(auth.ActionEnableTool, tool.ID)
	a.UV = false
	bad, _ := a.Get(begin.Options)
	if r := b.postJSON("/step-up/finish", map[string]any{"credential": jsonRaw(bad)}, nil); r.Code != http.StatusBadRequest {
		t.Fatalf("bad finish: %d", r.Code)
	}
	a.UV = true
	good, _ := a.Get(begin.Options)
	if r := b.postJSON("/step-up/finish", map[string]any{"credential": jsonRaw(good)}, nil); r.Code != http.StatusBadRequest {
		t.Fatalf("a good answer after a failed one reused the ceremony: %d", r.Code)
	}
	if r := b.enable(tool.ID); r.Code != http.StatusForbidden {
		t.Fatalf("enable: %d", r.Code)
	}
}

func TestStepUpIsBoundToTheSession(t *testing.T) {
	f := newFixture(t)
	a := authtest.New(testOrigin)
	b1 := f.signUp(a)
	b2 := f.browser()
	mustOK(t, "login", b2.login(a))
	tool := f.propose("restart_router")

	begin := b1.beginStepUp(auth.ActionEnableTool, tool.ID)
	cred, _ := a.Get(begin.Options)
	if r := b2.postJSON("/step-up/finish", map[string]any{"credential": jsonRaw(cred)}, nil); r.Code != http.StatusBadRequest {
		t.Fatalf("finish in another session: %d", r.Code)
	}
	_, r := b1.stepUp(a, auth.ActionEnableTool, tool.ID)
	mustOK(t, "step-up in b1", r)
	if r := b2.enable(tool.ID); r.Code != http.StatusForbidden {
		t.Fatalf("b2 used b1's step-up: %d", r.Code)
	}
}

func TestStepUpOlderThanWindowAsksAgain(t *testing.T) {
	f := newFixture(t)
	a := authtest.New(testOrigin)
	b := f.signUp(a)
	tool := f.propose("restart_router")

	_, r := b.stepUp(a, auth.ActionEnableTool, tool.ID)
	mustOK(t, "step-up", r)
	f.clock.Advance(5*time.Minute + time.Second)
	if r := b.enable(tool.ID); r.Code != http.StatusForbidden {
		t.Fatalf("enable after the window: %d", r.Code)
	}
	if f.state(tool.ID) != allowlist.StateProposed {
		t.Fatal("enabled with a stale step-up")
	}

	// Within the window it works, and activity does not stretch the window.
	_, r = b.stepUp(a, auth.ActionEnableTool, tool.ID)
	mustOK(t, "step-up", r)
	for range 4 {
		f.clock.Advance(time.Minute)
		mustOK(t, "activity", b.get("/tools"))
	}
	f.clock.Advance(time.Minute + time.Second)
	if r := b.enable(tool.ID); r.Code != http.StatusForbidden {
		t.Fatalf("activity extended the step-up: %d", r.Code)
	}
}

func TestStepUpCeremonyTimesOut(t *testing.T) {
	f := newFixture(t)
	a := authtest.New(testOrigin)
	b := f.signUp(a)
	tool := f.propose("restart_router")
	begin := b.beginStepUp(auth.ActionEnableTool, tool.ID)
	f.clock.Advance(auth.DefaultCeremonyTimeout + time.Second)
	cred, _ := a.Get(begin.Options)
	var ans finishAnswer
	if r := b.postJSON("/step-up/finish", map[string]any{"credential": jsonRaw(cred)}, &ans); r.Code != http.StatusBadRequest || !strings.Contains(ans.Error, "expired") {
		t.Fatalf("late finish: %d %+v", r.Code, ans)
	}
}

func TestLogoutClearsStepUp(t *testing.T) {
	f := newFixture(t)
	a := authtest.New(testOrigin)
	b := f.signUp(a)
	tool := f.propose("restart_router")
	_, r := b.stepUp(a, auth.ActionEnableTool, tool.ID)
	mustOK(t, "step-up", r)
	b.do(http.MethodPost, "/logout", nil, nil)
	mustOK(t, "login", b.login(a))
	if r := b.enable(tool.ID); r.Code != http.StatusForbidden {
		t.Fatalf("step-up survived sign-out: %d", r.Code)
	}
}

func TestLockClearsStepUps(t *testing.T) {
	f := newFixture(t)
	a := authtest.New(testOrigin)
	b := f.signUp(a)
	tool := f.propose("restart_router")
	_, r := b.stepUp(a, auth.ActionEnableTool, tool.ID)
	mustOK(t, "step-up", r)
	f.auth.ForgetStepUps()
	if r := b.enable(tool.ID); r.Code != http.StatusForbidden {
		t.Fatalf("step-up survived a lock: %d", r.Code)
	}
}

func TestDirectEnablePostWithoutStepUpChangesNothing(t *testing.T) {
	f := newFixture(t)
	a := authtest.New(testOrigin)
	b := f.signUp(a)
	tool := f.propose("restart_router")
	events := eventCount(t, f, tool.ID)

	// A plain form POST, as a script or a page without maven.js would send it.
	r := b.do(http.MethodPost, "/tools/"+itoa(tool.ID)+"/enable", strings.NewReader(""), http.Header{
		"Content-Type": {"application/x-www-form-urlencoded"},
	})
	if r.Code != http.StatusForbidden {
		t.Fatalf("direct POST: %d", r.Code)
	}
	if f.state(tool.ID) != allowlist.StateProposed || eventCount(t, f, tool.ID) != events {
		t.Fatal("a refused enable changed the row or its audit trail")
	}
}

func TestDisableNeedsNoStepUp(t *testing.T) {
	f := newFixture(t)
	a := authtest.New(testOrigin)
	b := f.signUp(a)
	tool := f.propose("restart_router")
	_, r := b.stepUp(a, auth.ActionEnableTool, tool.ID)
	mustOK(t, "step-up", r)
	mustOK(t, "enable", b.enable(tool.ID))

	r = b.htmx(http.MethodPost, "/tools/"+itoa(tool.ID)+"/disable", url.Values{})
	if r.Code != http.StatusOK || !strings.Contains(r.Body.String(), `data-state="disabled"`) {
		t.Fatalf("disable: %d %s", r.Code, r.Body.String())
	}
	if f.state(tool.ID) != allowlist.StateDisabled {
		t.Fatal("not disabled")
	}
	// The list is told to reload itself, so the row moves to its group and the counts follow.
	if got := r.Header().Get("HX-Trigger"); got != `{"maven:tools-changed":{"target":"#tool-list"}}` {
		t.Fatalf("HX-Trigger = %q", got)
	}
	list := b.htmx(http.MethodGet, "/tools", nil)
	if !strings.Contains(list.Body.String(), `hx-trigger="maven:tools-changed"`) || !strings.Contains(list.Body.String(), `data-group="disabled"`) {
		t.Fatalf("the list does not reload itself: %s", list.Body.String())
	}
}

func TestCrossOriginPostIsRefused(t *testing.T) {
	f := newFixture(t)
	a := authtest.New(testOrigin)
	b := f.signUp(a)
	tool := f.propose("restart_router")
	_, r := b.stepUp(a, auth.ActionEnableTool, tool.ID)
	mustOK(t, "step-up", r)

	evil := http.Header{"Sec-Fetch-Site": {"cross-site"}, "Origin": {"https://evil.example"}, "Hx-Request": {"true"}}
	if r := b.do(http.MethodPost, "/tools/"+itoa(tool.ID)+"/enable", nil, evil); r.Code != http.StatusForbidden {
		t.Fatalf("cross-site enable: %d", r.Code)
	}
	if f.state(tool.ID) != allowlist.StateProposed {
		t.Fatal("cross-site POST enabled the tool")
	}
	// Without Fetch Metadata, an Origin that is not the Host is refused too.
	b.siteHeader = ""
	if r := b.do(http.MethodPost, "/tools/"+itoa(tool.ID)+"/disable", nil, http.Header{
		"Origin": {"https://evil.example"},
	}); r.Code != http.StatusForbidden {
		t.Fatalf("foreign-origin disable: %d", r.Code)
	}
	b.siteHeader = "same-origin"
	if r := b.do(http.MethodPost, "/logout", nil, evil); r.Code != http.StatusForbidden {
		t.Fatalf("cross-site logout: %d", r.Code)
	}
	// The refusals spent nothing: the owner's own request still goes through.
	mustOK(t, "same-origin enable", b.enable(tool.ID))
}

func TestStepUpBeginRefusesUnknownTargets(t *testing.T) {
	f := newFixture(t)
	b := f.signUp(authtest.New(testOrigin))
	if r := b.postJSON("/step-up/begin", map[string]any{"action": "enable_tool", "id": 99}, nil); r.Code != http.StatusNotFound {
		t.Fatalf("unknown tool: %d", r.Code)
	}
	if r := b.postJSON("/step-up/begin", map[string]any{"action": "launch_rockets", "id": 1}, nil); r.Code != http.StatusBadRequest {
		t.Fatalf("unknown action: %d", r.Code)
	}
}

func TestCeremonyOriginMustBeConfigured(t *testing.T) {
	f := newFixture(t)
	b := f.browser()
	// Same origin as far as the browser goes, but not the origin Maven is configured for.
	b.origin = "http://localhost:9999"
	req := b.do(http.MethodPost, "/login/begin", strings.NewReader("{}"), http.Header{
		"Content-Type": {"application/json"}, "Sec-Fetch-Site": {"same-origin"},
	})
	if req.Code != http.StatusBadRequest {
		t.Fatalf("begin from an unconfigured origin: %d %s", req.Code, req.Body.String())
	}
}
