package e2e

import (
	"strings"
	"testing"
)

// getPasskey is navigator.credentials.get for RP "localhost", user verification required, with a
// PRF evaluation; it reports the outcome instead of throwing.
const getPasskey = `async () => {
	const rand = (n) => crypto.getRandomValues(new Uint8Array(n));
	try {
		const cred = await navigator.credentials.get({publicKey: {
			rpId: "localhost",
			challenge: rand(32),
			userVerification: "required",
			extensions: {prf: {eval: {first: rand(32)}}},
			timeout: 5000,
		}});
		const ext = cred.getClientExtensionResults();
		const data = new Uint8Array(cred.response.authenticatorData);
		return {
			flags: data[32],
			signCount: new DataView(data.buffer).getUint32(33),
			prfBytes: ext.prf && ext.prf.results ? ext.prf.results.first.byteLength : 0,
		};
	} catch (e) {
		return {error: e.name + ": " + e.message};
	}
}`

// assertion is what getPasskey returns.
type assertion struct {
	Flags     byte   `json:"flags"`
	SignCount uint32 `json:"signCount"`
	PRFBytes  int    `json:"prfBytes"`
	Error     string `json:"error"`
}

// TestVirtualAuthenticator checks the authenticator controls the journeys rely on
// (docs/security.md#req-40) against this Chromium, and pins down how it behaves: PRF output on
// assertion, the UV and signature overrides, backup flags, sign-count rollback, a failing user
// verification, and an authenticator without PRF. It checks what the browser does, not what Maven
// makes of it.
func TestVirtualAuthenticator(t *testing.T) {
	t.Parallel()
	tb := newBrowser(t, phone)
	m := startMaven(t, mavenOptions{})
	tb.Goto(m.URL("/healthz"))

	id := addAuthenticator(t, tb.Page, passkey())
	cdp := cdpSession(t, tb.Page)
	var created createdPasskey
	evalJSON(t, tb.Page, createPasskey, nil, &created)
	cred := onlyCredential(t, cdp, id)

	get := func(what string) assertion {
		t.Helper()
		var a assertion
		evalJSON(t, tb.Page, getPasskey, nil, &a)
		if a.Error != "" {
			t.Fatalf("%s: %s", what, a.Error)
		}
		return a
	}

	first := get("assertion")
	if first.PRFBytes != 32 || first.Flags&0x05 != 0x05 {
		t.Errorf("assertion: %d bytes of PRF output, flags %#02x; want 32 and UP+UV", first.PRFBytes, first.Flags)
	}
	if second := get("second assertion"); second.SignCount <= first.SignCount {
		t.Errorf("sign count went %d → %d, want it to grow", first.SignCount, second.SignCount)
	}

	setResponseOverrides(t, cdp, id, responseOverrides{IsBadUV: true})
	if a := get("with isBadUV"); a.Flags&0x04 != 0 {
		t.Errorf("with isBadUV: flags %#02x, want UV cleared", a.Flags)
	}
	setResponseOverrides(t, cdp, id, responseOverrides{IsBogusSignature: true})
	get("with isBogusSignature") // the browser passes it on; only the server can tell
	setResponseOverrides(t, cdp, id, responseOverrides{})
	if a := get("overrides cleared"); a.Flags&0x05 != 0x05 || a.PRFBytes != 32 {
		t.Errorf("overrides cleared: flags %#02x, %d bytes of PRF", a.Flags, a.PRFBytes)
	}

	yes := true
	setCredentialProperties(t, cdp, id, cred.CredentialID, &yes, &yes)
	if a := get("after setCredentialProperties"); a.Flags&0x18 != 0x18 {
		t.Errorf("after setCredentialProperties: flags %#02x, want BE and BS", a.Flags)
	}

	setSignCount(t, cdp, id, cred.CredentialID, 0)
	if a := get("after rollback"); a.SignCount != 1 || a.Flags&0x18 != 0x18 {
		t.Errorf("after rollback to 0: sign count %d, flags %#02x; want 1, BE and BS kept", a.SignCount, a.Flags)
	} else {
		t.Logf("after rollback: %d bytes of PRF output (the copy has no PRF secret)", a.PRFBytes)
	}

	setUserVerified(t, cdp, id, false)
	var failed assertion
	evalJSON(t, tb.Page, getPasskey, nil, &failed)
	if !strings.HasPrefix(failed.Error, "NotAllowedError") {
		t.Errorf("with user verification failing: %+v, want NotAllowedError", failed)
	}
	replaceAuthenticator(t, tb.Page, id, passkey())
	get("on the replacement authenticator")
	tb.Screenshot("phone")

	// An authenticator without PRF registers, and says so.
	plain := newBrowser(t)
	plain.Goto(m.URL("/healthz"))
	opts := passkey()
	opts.HasPRF = false
	addAuthenticator(t, plain.Page, opts)
	var noPRF createdPasskey
	evalJSON(t, plain.Page, createPasskey, nil, &noPRF)
	if noPRF.PRFEnabled {
		t.Errorf("an authenticator without PRF reports prf.enabled")
	}
}
