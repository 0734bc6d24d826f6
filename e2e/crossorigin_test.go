package e2e

import (
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestEnableRefusedCrossOriginOrWithoutStepUp: with the owner's own session cookie, a POST that
// enables a tool is refused (403) when it comes from another origin — even though the session
// holds a fresh step-up for that very tool — and when it comes from the right origin without a
// step-up. Neither changes anything in the database, and the cross-origin ones do not even spend
// the step-up: the page can still use it.
func TestEnableRefusedCrossOriginOrWithoutStepUp(t *testing.T) {
	t.Parallel()
	j := startTaskJourney(t, "5m")
	m, tb, a, b := j.m, j.tb, j.list, j.del

	// A fresh step-up for A; it renews the session token, so read the cookie after it.
	stepUp(t, tb, a.ID)
	cookie := sessionCookie(t, tb, m)
	// send sends method to path with the owner's cookie; a POST carries the fingerprint of the
	// row its path names, as the Enable button does.
	send := func(t *testing.T, method, path string, header map[string]string, fingerprint string) (int, string) {
		t.Helper()
		var form io.Reader
		if fingerprint != "" {
			form = strings.NewReader(url.Values{"fingerprint": {fingerprint}}.Encode())
		}
		req, err := http.NewRequest(method, m.URL(path), form)
		if err != nil {
			t.Fatal(err)
		}
		if fingerprint != "" {
			req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		}
		req.AddCookie(cookie)
		for k, v := range header {
			req.Header.Set(k, v)
		}
		resp, err := noRedirects.Do(req)
		if err != nil {
			t.Fatalf("%s %s: %v", method, path, err)
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
		return resp.StatusCode, string(body)
	}
	// The cookie is the owner's: outside the browser it still opens /tools.
	if status, _ := send(t, http.MethodGet, "/tools", nil, ""); status != http.StatusOK {
		t.Fatalf("GET /tools with the session cookie: %d, want 200", status)
	}

	before := tools(t, m)
	for _, tt := range []struct {
		name   string
		header map[string]string
	}{
		{"cross-site fetch metadata", map[string]string{"Origin": "http://evil.example", "Sec-Fetch-Site": "cross-site"}},
		{"foreign Origin, no fetch metadata", map[string]string{"Origin": "http://evil.example"}},
		{"same-site sibling origin", map[string]string{"Origin": "http://evil.localhost", "Sec-Fetch-Site": "same-site"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			tt.header["Accept"] = "application/json"
			status, body := send(t, http.MethodPost, "/tools/"+itoa(a.ID)+"/enable", tt.header, *a.Fingerprint)
			if status != http.StatusForbidden {
				t.Errorf("cross-origin enable: %d %s, want 403", status, body)
			}
			if !strings.Contains(body, "another site") {
				t.Errorf("cross-origin enable says %q, want the cross-origin refusal", body)
			}
		})
	}

	// Right origin, no step-up for B: 403, and the answer asks for one.
	status, body := send(t, http.MethodPost, "/tools/"+itoa(b.ID)+"/enable", map[string]string{
		"Origin": m.BaseURL, "Sec-Fetch-Site": "same-origin", "Accept": "application/json",
	}, *b.Fingerprint)
	if status != http.StatusForbidden {
		t.Fatalf("enable without step-up: %d %s, want 403", status, body)
	}
	var refusal struct {
		StepUp struct {
			Action string `json:"action"`
			Items  []struct {
				ID          int64  `json:"id"`
				Fingerprint string `json:"fingerprint"`
			} `json:"items"`
		} `json:"step_up"`
	}
	if err := json.Unmarshal([]byte(body), &refusal); err != nil || refusal.StepUp.Action != "enable_tool" ||
		len(refusal.StepUp.Items) != 1 || refusal.StepUp.Items[0].ID != b.ID || refusal.StepUp.Items[0].Fingerprint != *b.Fingerprint {
		t.Errorf("enable without step-up answered %s, want a step-up request for tool %d", body, b.ID)
	}
	// The same from a script of the page itself.
	if res := enableFrom(t, tb, b.ID); res.Status != http.StatusForbidden {
		t.Errorf("enable without step-up from the page: %+v, want 403", res)
	}

	if diff := cmp.Diff(before, tools(t, m)); diff != "" {
		t.Errorf("the refused requests changed the allowlist (-before +after):\n%s", diff)
	}
	tb.Goto(m.URL("/tools"))
	check(t, tb.Expect.Locator(row(tb, a.ID)).ToHaveAttribute("data-state", "proposed"), "A still proposed")
	check(t, tb.Expect.Locator(row(tb, b.ID)).ToHaveAttribute("data-state", "proposed"), "B still proposed")

	// Refused before the session was even read, the cross-origin POSTs left A's step-up unspent.
	if res := enableFrom(t, tb, a.ID); res.Type != "opaqueredirect" && res.Status != http.StatusOK {
		t.Fatalf("enable A from the page with its step-up: %+v, want success", res)
	}
	waitTool(t, m, a.Name, "enabled")
}
