package e2e

import (
	"testing"
	"time"
)

// createPasskey is navigator.credentials.create for RP "localhost" as Maven's registration asks
// for it: a discoverable credential, user verification required, and the PRF probe.
const createPasskey = `async () => {
	const rand = (n) => crypto.getRandomValues(new Uint8Array(n));
	const b64url = (buf) => btoa(String.fromCharCode(...new Uint8Array(buf)))
		.replace(/\+/g, "-").replace(/\//g, "_").replace(/=+$/, "");
	const cred = await navigator.credentials.create({publicKey: {
		rp: {id: "localhost", name: "Maven e2e"},
		user: {id: rand(32), name: "owner", displayName: "Owner"},
		challenge: rand(32),
		pubKeyCredParams: [{type: "public-key", alg: -7}, {type: "public-key", alg: -257}],
		authenticatorSelection: {residentKey: "required", requireResidentKey: true, userVerification: "required"},
		extensions: {prf: {}},
		timeout: 10000,
	}});
	const ext = cred.getClientExtensionResults();
	return {
		id: cred.id,
		rawId: b64url(cred.rawId),
		prfEnabled: !!(ext.prf && ext.prf.enabled),
		flags: new Uint8Array(cred.response.getAuthenticatorData())[32],
	};
}`

// createdPasskey is what createPasskey returns.
type createdPasskey struct {
	ID         string `json:"id"`
	RawID      string `json:"rawId"`
	PRFEnabled bool   `json:"prfEnabled"`
	Flags      byte   `json:"flags"` // authenticator data flags: UP 0x01, UV 0x04, BE 0x08, BS 0x10
}

// TestSmoke proves the harness on this machine: the daemon starts and answers in Chromium on
// http://localhost, and a virtual authenticator with PRF creates a passkey there.
func TestSmoke(t *testing.T) {
	t.Parallel()
	start := time.Now()
	tb := newBrowser(t)
	t.Logf("browser ready in %s (Playwright + Chromium launch for the whole run: %s)", time.Since(start).Round(time.Millisecond), suite.launchTook.Round(time.Millisecond))

	start = time.Now()
	m := startMaven(t, mavenOptions{})
	t.Logf("maven ready at %s in %s", m.BaseURL, time.Since(start).Round(time.Millisecond))

	tb.Goto(m.URL("/healthz"))
	if err := tb.Expect.Locator(tb.Page.Locator("body")).ToContainText(`"status":"ok"`); err != nil {
		t.Fatal(err)
	}

	id := addAuthenticator(t, tb.Page, passkey())
	cdp := cdpSession(t, tb.Page)
	if creds := virtualCredentials(t, cdp, id); len(creds) != 0 {
		t.Fatalf("a new authenticator holds %d credentials, want none", len(creds))
	}

	var got createdPasskey
	evalJSON(t, tb.Page, createPasskey, nil, &got)
	if !got.PRFEnabled {
		t.Errorf("prf.enabled is false: the virtual authenticator does not offer PRF here")
	}
	if got.Flags&0x05 != 0x05 {
		t.Errorf("flags %#02x: want user present and verified", got.Flags)
	}
	cred := onlyCredential(t, cdp, id)
	if cred.IDBase64URL() != got.RawID || got.ID != got.RawID {
		t.Errorf("authenticator holds credential %s, page created %s (rawId %s)", cred.IDBase64URL(), got.ID, got.RawID)
	}
	if !cred.IsResidentCredential || cred.RPID != "localhost" {
		t.Errorf("credential resident=%v rpId=%q, want a discoverable credential for localhost", cred.IsResidentCredential, cred.RPID)
	}
	t.Logf("smoke journey took %s", time.Since(start).Round(time.Millisecond))
}
