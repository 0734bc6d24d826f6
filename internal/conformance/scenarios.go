package main

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"

	"maven/internal/daemontest"
)

// scenarios is what Maven must do for each client scenario of the suite, step by step, once the
// daemon runs with the suite's server configured as "conformance" and its owner is signed in.
// A scenario missing here fails loudly. To make another scenario pass, add its steps here (read
// what its mock server offers and checks in
// node_modules/@modelcontextprotocol/conformance/dist/index.js), then delete its line from
// expectedFailures in conformance_test.go.
var scenarios = map[string][]step{
	// The mock answers initialize and an empty tools/list: Maven connects and lists.
	"initialize": {connected()},
	// The mock offers add_numbers(a, b: number, both required) and checks that it is called. Two
	// required numbers need the owner's phrase (docs/design.md#rule-15b); the tool does not claim
	// read-only, so voice asks to confirm first (rule 18).
	"tools_call": {
		connected(),
		enable("add_numbers"),
		phrases("add_numbers", "add {a} and {b}"),
		call("add 3 and 4", "The sum of 3 and 4 is 7"),
	},
	// The mock offers test_client_elicitation_defaults (no arguments, not read-only): called, it
	// asks for a form whose every field is optional with a default, and checks that the client
	// accepted it with every default applied (SEP-1034). Voice confirms the call, then reads the
	// form back as the server's question, and the owner accepts it with a yes.
	"elicitation-sep1034-client-defaults": {
		connected(),
		enable("test_client_elicitation_defaults"),
		call("test client elicitation defaults", "Elicitation completed", "yes"),
	},
	// The mock answers tools/call on an SSE stream that it closes after a priming event with
	// retry: 500, and answers on the GET the client must open 500 ms later with Last-Event-ID.
	"sse-retry": {
		connected(),
		enable("test_reconnection"),
		call("test reconnection", "Reconnection test completed successfully"),
	},

	// OAuth (auth.go). Each mock refuses initialize until Maven holds a token, offers test-tool,
	// and checks discovery, registration, PKCE, the resource indicator and the scopes asked for.
	"auth/metadata-default":                     signedIn(),
	"auth/metadata-var1":                        signedIn(),
	"auth/metadata-var2":                        signedIn(),
	"auth/metadata-var3":                        signedIn(),
	"auth/basic-cimd":                           signedIn(),
	"auth/scope-from-www-authenticate":          signedIn(),
	"auth/scope-from-scopes-supported":          signedIn(),
	"auth/scope-omitted-when-undefined":         signedIn(),
	"auth/token-endpoint-auth-basic":            signedIn(),
	"auth/token-endpoint-auth-post":             signedIn(),
	"auth/token-endpoint-auth-none":             signedIn(),
	"auth/2025-03-26-oauth-metadata-backcompat": signedIn(),
	"auth/2025-03-26-oauth-endpoint-fallback":   signedIn(),
	"auth/offline-access-scope":                 signedIn(),
	"auth/offline-access-not-supported":         signedIn(),
	// The client registered ahead of time: its secret sealed, the "oauth" key, a reload.
	"auth/pre-registration": append([]step{preRegistered()}, signedIn()...),
	// initialize needs no token, tools/list one with mcp:basic, tools/call one with mcp:write too:
	// the refused call makes the server ask the owner again, for both scopes.
	"auth/scope-step-up": {
		signIn(), connected(), enable("test-tool"), callRefused("test tool"),
		signIn(), connected(), call("test tool", "test"),
	},
	// With a token, every request is refused for mcp:admin, the very scope granted: Maven gives
	// up after one sign-in instead of asking the owner again and again.
	"auth/scope-retry-limit": {signIn(), gaveUp("refuses access it was granted")},
	// The protected resource metadata names https://evil.example.com/mcp: Maven refuses to sign
	// in (no authorization request, no token), and says why.
	"auth/resource-mismatch": {gaveUp("names another resource")},
}

// behindProxy names the scenarios whose Maven is served at an https origin, behind a reverse
// proxy that terminates TLS (the harness's browser plays it): auth/basic-cimd's mock wants the
// client id https://conformance-test.local/client-metadata.json, and Maven serves its client ID
// metadata document at /client-metadata.json on its https origin.
var behindProxy = map[string]string{"auth/basic-cimd": "https://conformance-test.local"}

// step is one thing Maven must do for a scenario.
type step struct {
	what string // for the log: "enable add_numbers"
	do   func(ctx context.Context, h *harness) error
}

// poll is how often a step looks again at what the daemon reports.
const poll = 25 * time.Millisecond

// connected waits until `maven mcp-servers --json` reports the suite's server connected.
func connected() step {
	return step{"the server is connected", func(ctx context.Context, h *harness) error {
		var last serverStatus
		return h.until(ctx, func() (bool, error) {
			var err error
			if last, err = h.server(ctx); err != nil {
				return false, err
			}
			return last.State == "connected", nil
		}, func() string { return fmt.Sprintf("the server is %+v", last) })
	}}
}

// enable enables the suite's tool as the owner does on /tools, once discovery proposed it: a
// step-up approving the fingerprint the page shows, then the Enable form.
func enable(tool string) step {
	return step{"enable " + tool, func(ctx context.Context, h *harness) error {
		row, err := h.row(ctx, tool, "proposed")
		if err != nil {
			return err
		}
		if err := h.owner.Enable(ctx, h.passkey, row.ID, row.Name); err != nil {
			return err
		}
		_, err = h.row(ctx, tool, "enabled")
		return err
	}}
}

// phrases saves the owner's phrases (one a line) for the suite's enabled tool, as the row's
// Save phrases button does, behind a step-up bound to the fingerprint shown.
func phrases(tool, text string) step {
	return step{fmt.Sprintf("give %s the phrases %q", tool, text), func(ctx context.Context, h *harness) error {
		row, err := h.row(ctx, tool, "enabled")
		if err != nil {
			return err
		}
		return h.owner.SavePhrases(ctx, h.passkey, row.ID, row.Name, text)
	}}
}

// call says utterance to POST /voice, confirms with "yes" if Maven asks to (a tool that does
// not claim read-only), answers each question its server asks (outcome ask) with the next of
// answers, and wants the tool to have run, its answer containing want.
func call(utterance, want string, answers ...string) step {
	return step{fmt.Sprintf("say %q", utterance), func(ctx context.Context, h *harness) error {
		r, err := h.sayConfirmed(ctx, utterance, answers...)
		switch {
		case err != nil:
			return err
		case r.Outcome != "ran" || !strings.Contains(r.Speech, want):
			return fmt.Errorf("voice answered %+v, want outcome ran with %q", r, want)
		}
		return nil
	}}
}

// sayConfirmed says utterance in a conversation of its own, and "yes" if Maven asks to confirm
// (a tool that does not claim read-only), then answers each question the tool's server asks
// (outcome ask) with the next of answers; it returns the last reply.
func (h *harness) sayConfirmed(ctx context.Context, utterance string, answers ...string) (daemontest.VoiceReply, error) {
	conversation := fmt.Sprintf("conformance-%d", time.Now().UnixNano())
	r, err := h.say(ctx, conversation, utterance)
	if err == nil && r.Outcome == "confirm" {
		r, err = h.say(ctx, conversation, "yes")
	}
	for ; err == nil && r.Outcome == "ask" && len(answers) > 0; answers = answers[1:] {
		r, err = h.say(ctx, conversation, answers[0])
	}
	return r, err
}

// serverStatus is an entry of `maven mcp-servers --json` (docs/design.md#ipc, mcp_servers).
type serverStatus struct {
	Name      string `json:"name"`
	State     string `json:"state"`
	LastError string `json:"last_error"`
	Tools     int    `json:"tools"`
}

// toolRow is an entry of `maven tools --json` (docs/design.md#ipc, tools).
type toolRow struct {
	ID    int64    `json:"id"`
	Name  string   `json:"name"`
	Cmd   []string `json:"cmd"`
	State string   `json:"state"`
}

// server is the suite's server as `maven mcp-servers --json` reports it.
func (h *harness) server(ctx context.Context) (serverStatus, error) {
	var list []serverStatus
	if err := h.cliJSON(ctx, &list, "mcp-servers", "--json"); err != nil {
		return serverStatus{}, err
	}
	for _, s := range list {
		if s.Name == serverName {
			return s, nil
		}
	}
	return serverStatus{}, fmt.Errorf("maven mcp-servers lists no %q: %+v", serverName, list)
}

// row waits until `maven tools --json` has the row of the suite's tool in state.
func (h *harness) row(ctx context.Context, tool, state string) (toolRow, error) {
	cmd := []string{"mcp", serverName, tool}
	var found toolRow
	err := h.until(ctx, func() (bool, error) {
		var rows []toolRow
		if err := h.cliJSON(ctx, &rows, "tools", "--json"); err != nil {
			return false, err
		}
		i := slices.IndexFunc(rows, func(r toolRow) bool { return slices.Equal(r.Cmd, cmd) })
		if i < 0 {
			return false, nil
		}
		found = rows[i]
		return found.State == state, nil
	}, func() string { return fmt.Sprintf("row %q is %+v, want it %s", strings.Join(cmd, " "), found, state) })
	return found, err
}

// say posts one utterance to POST /voice and logs the turn.
func (h *harness) say(ctx context.Context, conversation, text string) (daemontest.VoiceReply, error) {
	r, err := daemontest.Say(ctx, h.daemon.Addr, h.token, conversation, text)
	if err == nil {
		fmt.Fprintf(h.log, "  %q -> %s: %q\n", text, r.Outcome, r.Speech)
	}
	return r, err
}

// cliJSON runs a maven client command and decodes its stdout.
func (h *harness) cliJSON(ctx context.Context, out any, name string, args ...string) error {
	raw, err := h.daemon.CLI(ctx, h.bin, name, args...)
	if err != nil {
		return err
	}
	if err := json.Unmarshal([]byte(raw), out); err != nil {
		return fmt.Errorf("maven %s: %w: %s", name, err, raw)
	}
	return nil
}

// until polls cond until it holds, fails, or ctx ends; then the error says what was last seen.
func (h *harness) until(ctx context.Context, cond func() (bool, error), seen func() string) error {
	for {
		ok, err := cond()
		if ctx.Err() != nil {
			return fmt.Errorf("%w: %s", ctx.Err(), seen())
		}
		if err != nil || ok {
			return err
		}
		select {
		case <-ctx.Done():
		case <-time.After(poll):
		}
	}
}
