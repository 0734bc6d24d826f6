package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"strings"

	"maven/app/oauth/oauthtest"
)

// The steps of the suite's auth/* scenarios: Maven meets an OAuth-protected mock server, which
// refuses it (401); the owner signs in from the servers card as on the page (a step-up naming
// what the card shows, then the browser at the authorization server, which approves at once and
// sends it back to Maven's callback); Maven connects with the token.

// signedIn is the whole owner's path for a server that wants a sign-in before anything: sign in,
// see it connect, enable its tool and call it by voice.
func signedIn() []step {
	return []step{signIn(), connected(), enable("test-tool"), call("test tool", "test")}
}

// sealable lets the owner's passkey unlock Maven, once: that makes the vault, where a sign-in's
// tokens are sealed (without one the card offers no Sign in).
func (h *harness) sealable(ctx context.Context) error {
	if h.sealed {
		return nil
	}
	if _, err := h.owner.Enroll(ctx, h.passkey, h.passkeyID); err != nil {
		return err
	}
	h.sealed = true
	return nil
}

// signIn waits until the server needs a sign-in (state needs-auth) and signs in as the owner
// does from its card.
func signIn() step {
	return step{"sign in from the servers card", func(ctx context.Context, h *harness) error {
		if err := h.sealable(ctx); err != nil {
			return err
		}
		if _, err := h.state(ctx, "needs-auth"); err != nil {
			return err
		}
		return h.owner.SignIn(ctx, h.passkey, serverName, oauthtest.Authorize)
	}}
}

// gaveUp waits until Maven shows the server failed for why, and offers no Sign in for it: Maven
// refused to (go on) signing in, rather than not trying.
func gaveUp(why string) step {
	return step{"Maven refuses to sign in: " + why, func(ctx context.Context, h *harness) error {
		if err := h.sealable(ctx); err != nil {
			return err
		}
		st, err := h.state(ctx, "failed")
		if err != nil {
			return err
		}
		if !strings.Contains(st.LastError, why) {
			return fmt.Errorf("the server failed for another reason: %q, want %q", st.LastError, why)
		}
		if _, shown, err := h.owner.SignInShown(ctx, serverName); err != nil || shown {
			return fmt.Errorf("the servers card still offers a sign-in (%v)", err)
		}
		fmt.Fprintf(h.log, "  Maven says: %s\n", st.LastError)
		return nil
	}}
}

// callRefused says utterance, confirms, and wants the tool not to have run: the server refused
// the call for more scope, and now waits for the owner to grant it.
func callRefused(utterance string) step {
	return step{fmt.Sprintf("say %q, refused for more scope", utterance), func(ctx context.Context, h *harness) error {
		r, err := h.sayConfirmed(ctx, utterance)
		switch {
		case err != nil:
			return err
		case r.Outcome == "ran":
			return fmt.Errorf("voice answered %+v: the tool ran", r)
		case !strings.Contains(r.Speech, "sign in"):
			return fmt.Errorf("voice answered %+v: want it to say the server wants a sign-in", r)
		}
		_, err = h.state(ctx, "needs-auth")
		return err
	}}
}

// preRegistered gives the server the client the suite registered ahead of time (its id and
// secret in MCP_CONFORMANCE_CONTEXT) as the owner does: the secret sealed on /secrets, the
// "oauth" key in the config, and `maven reload`.
func preRegistered() step {
	return step{"configure the pre-registered client", func(ctx context.Context, h *harness) error {
		var client struct {
			ID     string `json:"client_id"`
			Secret string `json:"client_secret"`
		}
		if err := json.Unmarshal([]byte(h.getenv("MCP_CONFORMANCE_CONTEXT")), &client); err != nil || client.ID == "" {
			return fmt.Errorf("MCP_CONFORMANCE_CONTEXT names no client: %v", err)
		}
		if err := h.sealable(ctx); err != nil {
			return err
		}
		if err := h.owner.SetSecret(ctx, h.passkey, "conformance_client", client.Secret); err != nil {
			return err
		}
		cfg, err := json.Marshal(map[string]any{"mcpServers": map[string]any{serverName: map[string]any{
			"type": "http", "url": h.serverURL,
			"oauth": map[string]any{"client_id": client.ID, "client_secret": "${secret:conformance_client}"},
		}}})
		if err != nil {
			return err
		}
		if err := os.WriteFile(h.cfgPath, cfg, 0o600); err != nil {
			return err
		}
		out, err := h.daemon.CLI(ctx, h.bin, "reload")
		if err != nil {
			return fmt.Errorf("maven reload: %w: %s", err, out)
		}
		return nil
	}}
}

// state waits until the suite's server is in state, and returns its status.
func (h *harness) state(ctx context.Context, want string) (serverStatus, error) {
	var last serverStatus
	err := h.until(ctx, func() (bool, error) {
		st, err := h.server(ctx)
		if err != nil {
			return false, err
		}
		last = st
		return last.State == want, nil
	}, func() string { return fmt.Sprintf("the server was last %+v, want it %s", last, want) })
	return last, err
}
