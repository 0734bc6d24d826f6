package handlers_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"maven/app/allowlist"
	"maven/app/auth"
	"maven/app/auth/authtest"
	"maven/app/mcp"
)

// stepUpTrigger decodes the approval the HX-Trigger of a step-up refusal asks for.
func stepUpTrigger(t *testing.T, h http.Header) auth.Approval {
	t.Helper()
	var trig map[string]auth.Approval
	if err := json.Unmarshal([]byte(h.Get("HX-Trigger")), &trig); err != nil {
		t.Fatalf("HX-Trigger %q: %v", h.Get("HX-Trigger"), err)
	}
	d, ok := trig["maven:step-up"]
	if !ok {
		t.Fatalf("HX-Trigger %q has no maven:step-up", h.Get("HX-Trigger"))
	}
	return d
}

func eventCount(t *testing.T, f *fixture, id int64) int {
	t.Helper()
	evs, err := f.tools.Events(t.Context(), id)
	if err != nil {
		t.Fatal(err)
	}
	return len(evs)
}

// redefine makes the far end declare a new shape for an MCP row, as discovery records it.
func (f *fixture) redefine(tool allowlist.Tool, description string, readOnly bool) allowlist.Tool {
	f.t.Helper()
	d := mcp.Declared{Name: tool.RemoteName(), Description: description, InputSchema: tool.InputSchema, ReadOnlyHint: readOnly}
	shape, err := mcp.Fingerprint(d)
	if err != nil {
		f.t.Fatal(err)
	}
	var out allowlist.Tool
	err = f.tools.Update(f.t.Context(), func(tx *allowlist.Tx) error {
		out, err = tx.Redeclare(f.t.Context(), tool.ID, allowlist.Redeclaration{
			Fingerprint: shape.Fingerprint, Declared: shape.Canonical, Description: description, InputSchema: tool.InputSchema,
			ReadOnly: readOnly, ChangedFields: []string{"description"}, Provenance: "redefined by " + tool.Server(),
		})
		return err
	})
	if err != nil {
		f.t.Fatal(err)
	}
	return out
}

func TestEnableNeedsStepUpThenSucceeds(t *testing.T) {
	f := newFixture(t)
	a := authtest.New(testOrigin)
	b := f.signUp(a)
	tool := f.propose("restart_router")

	r := b.enable(tool)
	if r.Code != http.StatusForbidden {
		t.Fatalf("enable without step-up: %d", r.Code)
	}
	if got := stepUpTrigger(t, r.Header()); !got.Same(enableOf(tool)) {
		t.Fatalf("trigger %+v, want %+v", got, enableOf(tool))
	}
	if r.Header().Get("HX-Reswap") != "none" {
		t.Fatalf("a refused enable must swap nothing: %v", r.Header())
	}
	if f.state(tool.ID) != allowlist.StateProposed {
		t.Fatal("enabled without step-up")
	}

	begin := b.beginStepUp(enableOf(tool))
	if !strings.Contains(begin.Prompt, "restart_router") || !strings.Contains(begin.Prompt, tool.ApprovalDigest()[:19]) {
		t.Fatalf("prompt does not name the tool and its fingerprint: %q", begin.Prompt)
	}
	var opts struct {
		PublicKey struct {
			Challenge        string            `json:"challenge"`
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

	r = b.enable(tool)
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
	if r := b.enable(tool); r.Code != http.StatusForbidden {
		t.Fatalf("second enable reused the step-up: %d", r.Code)
	}
}

// stepUpCase is one session state that holds no fresh step-up covering a click on Enable of
// one row as its page showed it.
type stepUpCase struct {
	name    string
	prepare func(t *testing.T, e *enableEnv)
}

// enableEnv is a signed-in owner with one proposed row.
type enableEnv struct {
	f    *fixture
	a    *authtest.Authenticator
	b    *browser
	tool allowlist.Tool
}

// stepUpIn performs a step-up in b and requires the finish to answer want.
func (e *enableEnv) stepUpIn(t *testing.T, b *browser, approval auth.Approval, want int) {
	t.Helper()
	if _, r := b.stepUp(e.a, approval); r.Code != want {
		t.Fatalf("step-up for %+v: %d %s, want %d", approval, r.Code, r.Body.String(), want)
	}
}

func TestEnableWithoutACoveringStepUpChangesNothing(t *testing.T) {
	cases := []stepUpCase{
		{"no step-up", func(*testing.T, *enableEnv) {}},
		{"step-up without user verification", func(t *testing.T, e *enableEnv) {
			e.a.UV = false
			e.stepUpIn(t, e.b, enableOf(e.tool), http.StatusBadRequest)
		}},
		{"UV latched by earlier ceremonies but missing in this one", func(t *testing.T, e *enableEnv) {
			mustOK(t, "login", e.f.browser().login(e.a))
			e.a.UV = false
			e.stepUpIn(t, e.b, enableOf(e.tool), http.StatusBadRequest)
		}},
		{"step-up for another tool", func(t *testing.T, e *enableEnv) {
			e.stepUpIn(t, e.b, enableOf(e.f.propose("tool_b")), http.StatusOK)
		}},
		{"step-up for another action on the same id", func(t *testing.T, e *enableEnv) {
			e.stepUpIn(t, e.b, auth.One(auth.ActionRemovePasskey, e.tool.ID, ""), http.StatusOK)
		}},
		{"step-up for another shape of the same row", func(t *testing.T, e *enableEnv) {
			e.stepUpIn(t, e.b, auth.One(auth.ActionEnableTool, e.tool.ID, "sha256:another"), http.StatusOK)
		}},
		{"a failed answer consumed the ceremony", func(t *testing.T, e *enableEnv) {
			begin := e.b.beginStepUp(enableOf(e.tool))
			e.a.UV = false
			bad, _ := e.a.Get(begin.Options)
			e.a.UV = true
			good, _ := e.a.Get(begin.Options)
			for _, cred := range [][]byte{bad, good} {
				if r := e.b.postJSON("/step-up/finish", map[string]any{"credential": jsonRaw(cred)}, nil); r.Code != http.StatusBadRequest {
					t.Fatalf("finish after a failed one: %d", r.Code)
				}
			}
		}},
		{"step-up begun here, finished in another session", func(t *testing.T, e *enableEnv) {
			other := e.f.browser()
			mustOK(t, "login", other.login(e.a))
			cred, _ := e.a.Get(e.b.beginStepUp(enableOf(e.tool)).Options)
			if r := other.postJSON("/step-up/finish", map[string]any{"credential": jsonRaw(cred)}, nil); r.Code != http.StatusBadRequest {
				t.Fatalf("finish in another session: %d", r.Code)
			}
		}},
		{"step-up made in another session", func(t *testing.T, e *enableEnv) {
			other := e.f.browser()
			mustOK(t, "login", other.login(e.a))
			e.stepUpIn(t, other, enableOf(e.tool), http.StatusOK)
		}},
		{"step-up older than the window", func(t *testing.T, e *enableEnv) {
			e.stepUpIn(t, e.b, enableOf(e.tool), http.StatusOK)
			e.f.clock.Advance(5*time.Minute + time.Second)
		}},
		{"activity does not stretch the window", func(t *testing.T, e *enableEnv) {
			e.stepUpIn(t, e.b, enableOf(e.tool), http.StatusOK)
			for range 4 {
				e.f.clock.Advance(time.Minute)
				mustOK(t, "activity", e.b.get("/tools"))
			}
			e.f.clock.Advance(time.Minute + time.Second)
		}},
		{"signed out and in again", func(t *testing.T, e *enableEnv) {
			e.stepUpIn(t, e.b, enableOf(e.tool), http.StatusOK)
			e.b.do(http.MethodPost, "/logout", nil, nil)
			mustOK(t, "login", e.b.login(e.a))
		}},
		{"the daemon was locked", func(t *testing.T, e *enableEnv) {
			e.stepUpIn(t, e.b, enableOf(e.tool), http.StatusOK)
			e.f.auth.ForgetStepUps()
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			f := newFixture(t)
			e := &enableEnv{f: f, a: authtest.New(testOrigin)}
			e.b = f.signUp(e.a)
			e.tool = f.propose("restart_router")
			events := eventCount(t, f, e.tool.ID)
			c.prepare(t, e)
			e.a.UV = true
			r := e.b.enable(e.tool)
			if r.Code != http.StatusForbidden {
				t.Fatalf("enable: %d %s, want 403", r.Code, r.Body.String())
			}
			if got := stepUpTrigger(t, r.Header()); !got.Same(enableOf(e.tool)) {
				t.Fatalf("the refusal asks for %+v, want %+v", got, enableOf(e.tool))
			}
			if f.state(e.tool.ID) != allowlist.StateProposed || eventCount(t, f, e.tool.ID) != events {
				t.Fatal("a refused enable changed the row or its audit trail")
			}
			// The refusal spent nothing the owner needs: a fresh step-up enables the row.
			e.stepUpIn(t, e.b, enableOf(e.tool), http.StatusOK)
			mustOK(t, "enable after a fresh step-up", e.b.enable(e.tool))
		})
	}
}

func TestStepUpFinishRefusals(t *testing.T) {
	cases := []struct {
		name   string
		finish func(t *testing.T, e *enableEnv) (*http.Response, finishAnswer)
		want   string
	}{
		{"replayed answer", func(t *testing.T, e *enableEnv) (*http.Response, finishAnswer) {
			body, r := e.b.stepUp(e.a, enableOf(e.tool))
			mustOK(t, "finish", r)
			replay := e.b.do(http.MethodPost, "/step-up/finish", bytes.NewReader(body), http.Header{
				"Content-Type": {"application/json"}, "Accept": {"application/json"},
			})
			return decodeFinish(t, replay.Result(), replay.Body.Bytes())
		}, "already used or has expired"},
		{"no user verification", func(t *testing.T, e *enableEnv) (*http.Response, finishAnswer) {
			e.a.UV = false
			_, r := e.b.stepUp(e.a, enableOf(e.tool))
			return decodeFinish(t, r.Result(), r.Body.Bytes())
		}, "did not verify you"},
		{"ceremony timed out", func(t *testing.T, e *enableEnv) (*http.Response, finishAnswer) {
			begin := e.b.beginStepUp(enableOf(e.tool))
			e.f.clock.Advance(auth.DefaultCeremonyTimeout + time.Second)
			cred, _ := e.a.Get(begin.Options)
			r := e.b.postJSON("/step-up/finish", map[string]any{"credential": jsonRaw(cred)}, nil)
			return decodeFinish(t, r.Result(), r.Body.Bytes())
		}, "expired"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			f := newFixture(t)
			e := &enableEnv{f: f, a: authtest.New(testOrigin)}
			e.b = f.signUp(e.a)
			e.tool = f.propose("restart_router")
			res, ans := c.finish(t, e)
			if res.StatusCode != http.StatusBadRequest || !strings.Contains(ans.Error, c.want) {
				t.Fatalf("finish: %d %+v, want 400 saying %q", res.StatusCode, ans, c.want)
			}
		})
	}
}

func decodeFinish(t *testing.T, res *http.Response, body []byte) (*http.Response, finishAnswer) {
	t.Helper()
	var ans finishAnswer
	if err := json.Unmarshal(body, &ans); err != nil {
		t.Fatalf("finish answer %q: %v", body, err)
	}
	return res, ans
}

// TestEnableRefusesARowRedefinedSinceShown: a server redefines a proposed tool while the
// owner's /tools shows it (“Read this week’s report” becomes “Delete every report”). The click
// on Enable names the fingerprint the page rendered; Maven answers 409 with the row as it is
// now and what changed, enables nothing and asks for no passkey. The same holds for a row that
// was enabled, redefined, and is being enabled again; and the new shape, once shown, enables.
func TestEnableRefusesARowRedefinedSinceShown(t *testing.T) {
	const (
		seen = "Reads this week’s report."
		evil = "Delete every report."
	)
	for _, reEnable := range []bool{false, true} {
		name := map[bool]string{false: "proposed row", true: "re-enabling a redefined row"}[reEnable]
		t.Run(name, func(t *testing.T) {
			f := newFixture(t)
			a := authtest.New(testOrigin)
			b := f.signUp(a)
			tool := f.proposeMCP("reports", "weekly", "Reads last week's report.", `{"type":"object"}`, true)
			if reEnable {
				b.mustStepUp(a, enableOf(tool))
				mustOK(t, "enable", b.enable(tool))
			}
			shown := f.redefine(tool, seen, true) // what the owner's page renders
			if !strings.Contains(rowHTML(t, b.get("/tools").Body.String(), tool.ID), `data-fingerprint="`+shown.ApprovalDigest()+`"`) {
				t.Fatal("the row does not carry the fingerprint the page shows")
			}
			// The owner even stepped up for what they saw; then the server redefines it.
			b.mustStepUp(a, enableOf(shown))
			now := f.redefine(shown, evil, false)
			events := eventCount(t, f, tool.ID)

			r := b.enable(shown)
			if r.Code != http.StatusConflict {
				t.Fatalf("enable of the shape shown: %d %s, want 409", r.Code, r.Body.String())
			}
			body := r.Body.String()
			for _, want := range []string{
				`id="tool-` + itoa(tool.ID) + `"`, `data-state="proposed"`, `data-fingerprint="` + now.ApprovalDigest() + `"`,
				"Changed since this page showed it", "it was not enabled", seen, evil, "may change things",
			} {
				if !strings.Contains(body, want) {
					t.Errorf("the refusal's row lacks %q:\n%s", want, body)
				}
			}
			if r.Header().Get("HX-Trigger") != "" {
				t.Errorf("a changed row must not ask for the passkey: HX-Trigger %q", r.Header().Get("HX-Trigger"))
			}
			if f.state(tool.ID) != allowlist.StateProposed || eventCount(t, f, tool.ID) != events {
				t.Fatal("the redefined row was enabled, or its audit trail changed")
			}
			// The grant for what was seen is still unspent, yet it can never enable the new shape.
			r = b.enable(now)
			if r.Code != http.StatusForbidden || !stepUpTrigger(t, r.Header()).Same(enableOf(now)) {
				t.Fatalf("enable of the new shape without its own step-up: %d", r.Code)
			}
			// The owner's normal path: step up for the shape now shown, and it is enabled.
			b.mustStepUp(a, enableOf(now))
			mustOK(t, "enable the new shape", b.enable(now))
			if got, _ := f.tools.Get(t.Context(), tool.ID); got.State != allowlist.StateEnabled || got.Fingerprint != now.Fingerprint {
				t.Fatalf("after enabling the shape shown: %+v", got)
			}
		})
	}
}

func TestLocalRowBindsToItsCommandLineAndName(t *testing.T) {
	f := newFixture(t)
	a := authtest.New(testOrigin)
	b := f.signUp(a)
	tool := f.propose("restart_router")
	b.mustStepUp(a, enableOf(tool))
	// A config reload gives the same command another spoken name after the page showed it.
	renamed, _, err := f.tools.ProposeTool(t.Context(), allowlist.Proposal{
		Name: "reboot_everything", Cmd: tool.Cmd, Scope: allowlist.ScopeLocal,
		Source: allowlist.SourceConfig, Provenance: "config", Actor: "config",
	})
	if err != nil || renamed.ApprovalDigest() == tool.ApprovalDigest() {
		t.Fatalf("rename: %v; digest %s → %s", err, tool.ApprovalDigest(), renamed.ApprovalDigest())
	}
	if r := b.enable(tool); r.Code != http.StatusConflict || !strings.Contains(r.Body.String(), "reboot_everything") {
		t.Fatalf("enable of the renamed command as shown before: %d %s", r.Code, r.Body.String())
	}
	if f.state(tool.ID) != allowlist.StateProposed {
		t.Fatal("enabled under a name the owner was not shown")
	}
}

func TestDisableNeedsNoStepUp(t *testing.T) {
	f := newFixture(t)
	a := authtest.New(testOrigin)
	b := f.signUp(a)
	tool := f.propose("restart_router")
	b.mustStepUp(a, enableOf(tool))
	mustOK(t, "enable", b.enable(tool))

	r := b.htmx(http.MethodPost, "/tools/"+itoa(tool.ID)+"/disable", url.Values{})
	if r.Code != http.StatusOK || !strings.Contains(r.Body.String(), `data-state="disabled"`) {
		t.Fatalf("disable: %d %s", r.Code, r.Body.String())
	}
	if f.state(tool.ID) != allowlist.StateDisabled {
		t.Fatal("not disabled")
	}
	// The row stays in place saying what was done, and the filters' counts follow out of band.
	body := r.Body.String()
	if !strings.Contains(body, `<span class="feedback" role="status" tabindex="-1">Disabled.</span>`) ||
		!strings.Contains(body, `id="tool-filters"`) || !strings.Contains(body, `hx-swap-oob="true"`) {
		t.Fatalf("the answer does not say what was done or update the counts: %s", body)
	}
}

func TestCrossOriginPostIsRefused(t *testing.T) {
	f := newFixture(t)
	a := authtest.New(testOrigin)
	b := f.signUp(a)
	tool := f.propose("restart_router")
	b.mustStepUp(a, enableOf(tool))

	evil := http.Header{"Sec-Fetch-Site": {"cross-site"}, "Origin": {"https://evil.example"}, "Hx-Request": {"true"},
		"Content-Type": {"application/x-www-form-urlencoded"}}
	form := strings.NewReader(url.Values{"fingerprint": {tool.ApprovalDigest()}}.Encode())
	if r := b.do(http.MethodPost, "/tools/"+itoa(tool.ID)+"/enable", form, evil); r.Code != http.StatusForbidden {
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
	mustOK(t, "same-origin enable", b.enable(tool))
}

// TestOriginOfTheOtherSchemeIsRefused: an Origin naming Maven's host by the other scheme
// (https://host when Maven is http://host, and the other way round) is another origin, refused
// on an unsafe method whatever Fetch Metadata says; net/http's check alone compares only the
// host when a browser sends none. The configured origin goes through, and so does a browser's
// "null" (its own POSTs under Referrer-Policy no-referrer) with Fetch Metadata.
func TestOriginOfTheOtherSchemeIsRefused(t *testing.T) {
	for _, tt := range []struct{ configured, other string }{
		{"http://" + testHost, "https://" + testHost},
		{"https://" + testHost, "http://" + testHost},
	} {
		f := newFixture(t)
		f.origins = []string{tt.configured}
		f.tls = strings.HasPrefix(tt.configured, "https:")
		f.boot()
		b := f.browser()
		for _, site := range []string{"", "same-origin", "same-site", "cross-site", "none"} {
			h := http.Header{"Origin": {tt.other}}
			if site != "" {
				h.Set("Sec-Fetch-Site", site)
			}
			b.siteHeader = ""
			if r := b.do(http.MethodPost, "/logout", nil, h); r.Code != http.StatusForbidden {
				t.Errorf("Maven at %s, POST with Origin %s, Sec-Fetch-Site %q: %d, want 403", tt.configured, tt.other, site, r.Code)
			}
		}
		for _, h := range []http.Header{
			{"Origin": {tt.configured}},
			{"Origin": {tt.configured}, "Sec-Fetch-Site": {"same-origin"}},
			{"Origin": {"null"}, "Sec-Fetch-Site": {"same-origin"}},
		} {
			if r := b.do(http.MethodPost, "/logout", nil, h); r.Code != http.StatusSeeOther {
				t.Errorf("Maven at %s, POST with %v: %d, want 303", tt.configured, h, r.Code)
			}
		}
	}
}

func TestStepUpBeginRefusesWhatCannotBeApproved(t *testing.T) {
	f := newFixture(t)
	b := f.signUp(authtest.New(testOrigin))
	tool := f.propose("restart_router")
	many := auth.Approval{Action: auth.ActionEnableTool}
	for i := range auth.MaxItems + 1 {
		many.Items = append(many.Items, auth.Item{Target: int64(i + 1), Digest: "sha256:x"})
	}
	for _, c := range []struct {
		name string
		body any
		want int
	}{
		{"unknown tool", enableOf(allowlist.Tool{ID: 99, Fingerprint: "sha256:x"}), http.StatusNotFound},
		{"unknown action", auth.One("launch_rockets", 1, ""), http.StatusBadRequest},
		{"enable without the fingerprint shown", auth.One(auth.ActionEnableTool, tool.ID, ""), http.StatusBadRequest},
		{"no items", auth.Approval{Action: auth.ActionEnableTool}, http.StatusBadRequest},
		{"a batch beyond the limit", many, http.StatusBadRequest},
		{"the same row twice", auth.Approval{Action: auth.ActionEnableTool, Items: []auth.Item{
			{Target: tool.ID, Digest: tool.ApprovalDigest()}, {Target: tool.ID, Digest: "sha256:other"}}}, http.StatusBadRequest},
		{"an old client's shape", map[string]any{"action": "enable_tool", "id": tool.ID}, http.StatusBadRequest},
	} {
		if r := b.postJSON("/step-up/begin", c.body, nil); r.Code != c.want {
			t.Errorf("%s: %d %s, want %d", c.name, r.Code, r.Body.String(), c.want)
		}
	}
	// A click that names no fingerprint is malformed, not a step-up to ask for.
	if r := b.htmx(http.MethodPost, "/tools/"+itoa(tool.ID)+"/enable", url.Values{}); r.Code != http.StatusBadRequest || r.Header().Get("HX-Trigger") != "" {
		t.Fatalf("enable without a fingerprint: %d %v", r.Code, r.Header())
	}
	if f.state(tool.ID) != allowlist.StateProposed {
		t.Fatal("enabled")
	}
}

func TestBatchStepUpNamesEveryItem(t *testing.T) {
	f := newFixture(t)
	a := authtest.New(testOrigin)
	b := f.signUp(a)
	one, two := f.propose("tool_one"), f.propose("tool_two")
	batch := auth.Approval{Action: auth.ActionEnableTool, Items: []auth.Item{
		{Target: two.ID, Digest: two.ApprovalDigest()}, {Target: one.ID, Digest: one.ApprovalDigest()}}}
	begin := b.beginStepUp(batch)
	for _, want := range []string{"these 2 tools", "tool_one", "tool_two", one.ApprovalDigest()[:19], two.ApprovalDigest()[:19]} {
		if !strings.Contains(begin.Prompt, want) {
			t.Errorf("batch prompt lacks %q: %s", want, begin.Prompt)
		}
	}
	cred, err := a.Get(begin.Options)
	if err != nil {
		t.Fatal(err)
	}
	var ans struct {
		Approved auth.Approval `json:"approved"`
	}
	mustOK(t, "finish", b.postJSON("/step-up/finish", map[string]any{"credential": jsonRaw(cred)}, &ans))
	if !ans.Approved.Same(batch) || len(ans.Approved.Items) != 2 {
		t.Fatalf("the finish names %+v, want both items", ans.Approved)
	}
	// One batch grant is no grant for one of its rows alone.
	if r := b.enable(one); r.Code != http.StatusForbidden {
		t.Fatalf("a single enable spent the batch's grant: %d", r.Code)
	}
}

// TestAskingForAStepUpIsNoFailure: the 403 that asks for a step-up is how every step-up begins:
// the log records it at debug as a step-up asked, not as a request that failed; a real refusal
// is still a failure.
func TestAskingForAStepUpIsNoFailure(t *testing.T) {
	f := newFixture(t)
	b := f.signUp(authtest.New(testOrigin))
	tool := f.propose("restart_router")
	if r := b.enable(tool); r.Code != http.StatusForbidden || r.Header().Get("HX-Trigger") == "" {
		t.Fatalf("enable without a step-up: %d %v", r.Code, r.Header())
	}
	logs := f.logs.String()
	if !strings.Contains(logs, `msg="step-up asked" method=POST path=/tools/`+itoa(tool.ID)+`/enable action=enable_tool`) ||
		strings.Contains(logs, `msg="request failed" method=POST path=/tools/`+itoa(tool.ID)+`/enable`) {
		t.Fatalf("the step-up asked for is logged as:\n%s", logs)
	}
	if r := b.htmx(http.MethodPost, "/tools/999/disable", nil); r.Code != http.StatusNotFound {
		t.Fatalf("disable of no row: %d", r.Code)
	}
	if !strings.Contains(f.logs.String(), `msg="request failed" method=POST path=/tools/999/disable status=404`) {
		t.Fatal("a real refusal is no longer logged as a failure")
	}
}

// TestCeremonyOriginMustBeConfigured: a ceremony begun with an Origin that is not configured,
// though the browser calls it same-origin, is refused before it begins: by the cross-origin
// check, which wants a configured Origin, and behind it by auth's own check of the origin.
func TestCeremonyOriginMustBeConfigured(t *testing.T) {
	f := newFixture(t)
	b := f.browser()
	// Same origin as far as the browser goes, but not the origin Maven is configured for.
	b.origin = "http://localhost:9999"
	req := b.do(http.MethodPost, "/login/begin", strings.NewReader("{}"), http.Header{
		"Content-Type": {"application/json"}, "Sec-Fetch-Site": {"same-origin"},
	})
	if req.Code != http.StatusForbidden || strings.Contains(req.Body.String(), "publicKey") {
		t.Fatalf("begin from an unconfigured origin: %d %s", req.Code, req.Body.String())
	}
	if _, err := f.auth.BeginLogin(t.Context(), "sid", "http://localhost:9999"); !errors.Is(err, auth.ErrBadOrigin) {
		t.Fatalf("auth began a sign-in for an unconfigured origin: %v", err)
	}
}

// TestEveryStepUpRouteAsksForItsOwnApproval: each action that needs a step-up, asked for
// without one, is refused with 403 and a trigger naming exactly what to approve; a step-up for
// any other route's approval does not open it; nothing runs.
func TestEveryStepUpRouteAsksForItsOwnApproval(t *testing.T) {
	f := newFixture(t)
	a, phone := authtest.New(testOrigin), authtest.New(testOrigin)
	b := f.signUp(a)
	b.addPasskey(a, phone, "Phone")
	tool := f.propose("restart_router")
	adder := b.enabledMCP(a, "calc", "add", "Adds two numbers.", addSchema)
	command := f.pendingCommand("notes", "notes-server")
	f.servers.set(waiting("notes"))

	routes := []struct {
		path     string
		form     url.Values
		approval auth.Approval
	}{
		{"/tools/" + itoa(tool.ID) + "/enable", url.Values{"fingerprint": {tool.ApprovalDigest()}}, enableOf(tool)},
		{"/tools/" + itoa(adder.ID) + "/phrases", url.Values{"fingerprint": {adder.ApprovalDigest()}, "phrases": {"add {a} and {b}"}}, phrasesOf(adder)},
		{"/servers/commands/" + itoa(command) + "/approve", url.Values{}, auth.One(auth.ActionAddServer, command, "")},
		{"/passkeys/2/remove", url.Values{}, auth.One(auth.ActionRemovePasskey, 2, "")},
		{"/passkeys/add/begin", nil, auth.One(auth.ActionAddPasskey, 0, "")},
		{"/secrets", url.Values{"name": {"tok"}, "value": {"v"}}, auth.One(auth.ActionSetSecret, 0, "tok")},
		{"/secrets/recovery", url.Values{}, auth.One(auth.ActionRotateRecovery, 0, "")},
	}
	for i, rt := range routes {
		t.Run(rt.path, func(t *testing.T) {
			// In a session of its own, a grant for the route before it opens nothing here.
			b := f.browser()
			mustOK(t, "login", b.login(a))
			b.mustStepUp(a, routes[(i+len(routes)-1)%len(routes)].approval)
			post := func(path string, form url.Values) *http.Response {
				if form == nil {
					return b.postJSON(path, map[string]any{}, nil).Result()
				}
				return b.htmx(http.MethodPost, path, form).Result()
			}
			res := post(rt.path, rt.form)
			if res.StatusCode != http.StatusForbidden {
				t.Fatalf("without its step-up: %d %v, want 403", res.StatusCode, res.Header)
			}
			if got := stepUpTrigger(t, res.Header); !got.Same(rt.approval) {
				t.Fatalf("the refusal asks for %+v, want %+v", got, rt.approval)
			}
		})
	}
	if f.state(tool.ID) != allowlist.StateProposed || f.approved("notes") || len(f.waker.list()) != 0 || f.savedLines(adder.ID) != nil {
		t.Fatal("a refused step-up route changed something")
	}
	if ps, _ := f.auth.Passkeys(t.Context()); len(ps) != 2 {
		t.Fatal("a passkey was removed")
	}
}
