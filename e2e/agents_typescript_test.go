package e2e

import (
	"bufio"
	"encoding/json"
	"io"
	"os/exec"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"maven/internal/daemontest"
	"maven/internal/testenv"
)

// tsEvent is one line e2e/agents/ts-client.mjs prints.
type tsEvent struct {
	Event        string          `json:"event"`
	URL          string          `json:"url"`
	Server       string          `json:"server"`
	Tools        json.RawMessage `json:"tools"`
	IsError      bool            `json:"isError"`
	Text         string          `json:"text"`
	Message      string          `json:"message"`
	Unauthorized bool            `json:"unauthorized"`
	Error        string          `json:"error"`
	at           time.Time       // when the test read it
}

// tsClient is the TypeScript SDK's client, run by the system node.
type tsClient struct {
	t                  *testing.T
	in                 io.WriteCloser
	authorize, changed chan tsEvent // sign-ins asked for; list changes, with the list after
	replies            chan tsEvent // everything else, in order
	stderr             *daemontest.Log
}

func startTSClient(t *testing.T, mcpURL string) *tsClient {
	t.Helper()
	node, err := exec.LookPath("node")
	if err != nil {
		testenv.MissingPeer(t, "node is not on PATH")
	}
	root, err := testenv.ModuleRoot()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := exec.Command(node, "-e", "require.resolve('@modelcontextprotocol/sdk/package.json', {paths: [process.argv[1]]})", root).CombinedOutput(); err != nil {
		testenv.MissingPeer(t, "npm package @modelcontextprotocol/sdk is not installed")
	}
	cmd := exec.Command(node, filepath.Join(root, "e2e", "agents", "ts-client.mjs"), mcpURL)
	c := &tsClient{t: t, authorize: make(chan tsEvent, 10), changed: make(chan tsEvent, 100), replies: make(chan tsEvent, 10),
		stderr: &daemontest.Log{}}
	cmd.Stderr = c.stderr
	if c.in, err = cmd.StdinPipe(); err != nil {
		t.Fatal(err)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go c.read(out)
	t.Cleanup(func() {
		c.in.Close()
		done := make(chan error, 1)
		go func() { done <- cmd.Wait() }()
		select {
		case <-done:
		case <-time.After(5 * time.Second):
			cmd.Process.Kill()
			<-done
		}
		if t.Failed() {
			t.Logf("ts-client.mjs stderr:\n%s", c.stderr.String())
		}
	})
	return c
}

func (c *tsClient) read(out io.Reader) {
	lines := bufio.NewScanner(out)
	lines.Buffer(make([]byte, 1<<20), 4<<20)
	for lines.Scan() {
		var e tsEvent
		if err := json.Unmarshal(lines.Bytes(), &e); err != nil {
			c.stderr.Write([]byte("not an event: " + lines.Text() + "\n"))
			continue
		}
		e.at = time.Now()
		switch e.Event {
		case "authorize":
			c.authorize <- e
		case "list_changed":
			c.changed <- e
		default:
			c.replies <- e
		}
	}
	close(c.replies)
}

// next is the script's next reply, within actionTimeout.
func (c *tsClient) next(what string) tsEvent {
	c.t.Helper()
	select {
	case e, ok := <-c.replies:
		if !ok {
			c.t.Fatalf("%s: ts-client.mjs exited:\n%s", what, c.stderr.String())
		}
		return e
	case <-time.After(actionTimeout):
		c.t.Fatalf("%s: no answer from ts-client.mjs within %s:\n%s", what, actionTimeout, c.stderr.String())
		return tsEvent{}
	}
}

// send writes one command to the script and returns its reply.
func (c *tsClient) send(cmd map[string]any) tsEvent {
	c.t.Helper()
	b, _ := json.Marshal(cmd)
	if _, err := c.in.Write(append(b, '\n')); err != nil {
		c.t.Fatalf("write to ts-client.mjs: %v", err)
	}
	return c.next(cmd["op"].(string))
}

// tsTools are the names of a tools event's tools, sorted.
func tsTools(t *testing.T, e tsEvent) []string {
	t.Helper()
	var tools []struct {
		Name string `json:"name"`
	}
	if err := json.Unmarshal(e.Tools, &tools); err != nil {
		var names []string
		if json.Unmarshal(e.Tools, &names) != nil {
			t.Fatalf("tools of %+v: %v", e, err)
		}
		slices.Sort(names)
		return names
	}
	var out []string
	for _, tool := range tools {
		out = append(out, tool.Name)
	}
	slices.Sort(out)
	return out
}

// typeScriptJourney: the TypeScript SDK's client, as a desktop client built on it connects,
// signs in with its own OAuth client (DCR, PKCE, resource), lists what the owner ticked, runs
// the read-only tool, is refused the destructive one; a redefinition reaches it within a second
// as notifications/tools/list_changed, whose list lacks the tool; revoked, its call fails with
// nothing run, and connecting again it is asked to sign in again.
func typeScriptJourney(t *testing.T, w *peersWorld) {
	ts := startTSClient(t, w.m.URL("/mcp"))
	var ask tsEvent
	select {
	case ask = <-ts.authorize:
	case <-time.After(nodeStartTimeout):
		t.Fatalf("the SDK never sent the browser to sign in within %s:\n%s", nodeStartTimeout, ts.stderr.String())
	}
	if q := authorizeQuery(t, ask.URL); q.Get("code_challenge_method") != "S256" || q.Get("resource") != w.m.URL("/mcp") || q.Get("state") == "" {
		t.Errorf("the SDK's authorization request: %v", q)
	}
	w.consent(t, ask.URL, granted("ts")...)
	check(t, w.owner.Expect.Page(w.owner.Page).ToHaveTitle("Back at the TypeScript client"), "the browser is back at the client")
	if e := ts.next("connect"); e.Event != "connected" || e.Server != "maven" {
		t.Fatalf("connecting after the consent: %+v\n%s", e, ts.stderr.String())
	}

	if got := tsTools(t, ts.send(map[string]any{"op": "list"})); !slices.Equal(got, granted("ts")) {
		t.Fatalf("the SDK lists %q, want %q", got, granted("ts"))
	}
	if e := ts.send(map[string]any{"op": "call", "name": "tasks_list_tasks"}); e.Event != "result" || e.IsError || e.Text != "Two open tasks: buy milk, call Ann." {
		t.Errorf("the read-only call: %+v", e)
	}
	if e := ts.send(map[string]any{"op": "call", "name": "tasks_delete_task"}); e.Event != "result" || !speakable(e.Text) || w.up.Calls("delete_task") != 0 {
		t.Errorf("the destructive call: %+v; the server ran it %d times", e, w.up.Calls("delete_task"))
	}

	for len(ts.changed) > 0 { // changes before this one (the other peers' journeys)
		<-ts.changed
	}
	redefined := time.Now()
	w.redefine(t, "peek_ts")
	// Each list change the SDK heard, until one whose list lacks the tool, which must have come
	// within a second of the server's redefinition (docs/design.md#rule-27).
	for gone := false; !gone; {
		select {
		case e := <-ts.changed:
			if gone = e.Error == "" && !slices.Contains(tsTools(t, e), "tasks_peek_ts"); gone {
				if took := e.at.Sub(redefined); took > time.Second {
					t.Errorf("the list without tasks_peek_ts reached the SDK %s after the redefinition", took)
				}
				t.Logf("the list change reached the SDK %s after the redefinition", e.at.Sub(redefined).Round(time.Millisecond))
			}
		case <-time.After(actionTimeout):
			t.Fatalf("no list change without tasks_peek_ts within %s of the redefinition", actionTimeout)
		}
	}

	ran := w.up.Calls("list_tasks")
	w.revokeNamed(t, "TypeScript SDK client")
	// Its session ended with the revocation: the call fails. A new connection with the tokens it
	// holds is refused (401; the refresh token is revoked too), and the SDK asks the user to sign
	// in again.
	if e := ts.send(map[string]any{"op": "call", "name": "tasks_list_tasks"}); e.Event != "error" || w.up.Calls("list_tasks") != ran {
		t.Errorf("a call after the revocation: %+v; the server ran %d more", e, w.up.Calls("list_tasks")-ran)
	}
	if e := ts.send(map[string]any{"op": "reconnect"}); e.Event != "error" || !e.Unauthorized {
		t.Errorf("connecting again after the revocation: %+v", e)
	}
	select {
	case <-ts.authorize:
	case <-time.After(actionTimeout):
		t.Error("after the revocation the SDK did not ask to sign in again")
	}
}
