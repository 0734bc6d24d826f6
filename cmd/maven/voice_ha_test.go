package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"maven/app/activity"
	"maven/app/allowlist"
	"maven/app/auth"
	"maven/app/auth/authtest"
	"maven/app/phrases"
	"maven/app/voice/hatest"
	"maven/db"
	"maven/internal/daemontest"
	"maven/internal/testenv"
)

// haClient posts to /voice as Home Assistant's webhook-conversation does: HTTP Basic with the
// token as password, the body hatest builds, aiohttp's Accept.
type haClient struct {
	t     *testing.T
	addr  string
	token string
	user  string
	log   []hatest.Message // the chat log so far, as Home Assistant keeps it
	conv  string
	home  []hatest.Entity
}

func (c *haClient) say(text string, stream bool) string {
	c.t.Helper()
	c.log = append(c.log, hatest.Text("user", text))
	body := hatest.Body(hatest.Chat{ConversationID: c.conv, Log: c.log, Stream: stream, UserID: &c.user, Entities: c.home})
	req, _ := http.NewRequest(http.MethodPost, "http://"+c.addr+"/voice", bytes.NewReader(body))
	req.SetBasicAuth("homeassistant", c.token)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "*/*")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		c.t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		raw, _ := io.ReadAll(resp.Body)
		c.t.Fatalf("Error contacting webhook: HTTP %d %s", resp.StatusCode, raw)
	}
	var answer string
	if stream {
		answer = readNDJSON(c.t, resp.Body)
	} else {
		var out map[string]any
		if err := json.NewDecoder(resp.Body).Decode(&out); err != nil {
			c.t.Fatal(err)
		}
		answer, _ = out["output"].(string)
	}
	c.log = append(c.log, hatest.Text("assistant", answer))
	return answer
}

// readNDJSON reads a streamed answer line by line, as the integration does.
func readNDJSON(t *testing.T, r io.Reader) string {
	t.Helper()
	var b strings.Builder
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		var chunk struct{ Type, Content string }
		if json.Unmarshal([]byte(strings.TrimSpace(sc.Text())), &chunk) != nil {
			continue
		}
		switch chunk.Type {
		case "item":
			b.WriteString(chunk.Content)
		case "end":
			return b.String()
		}
	}
	t.Fatalf("no end line after %q", b.String())
	return ""
}

// TestHomeAssistantTalksToServerEverything drives the real daemon as Home Assistant does, with
// server-everything behind it: phrases with two numbers, wake word and fillers, a question for
// a missing value answered in the next turn of the chat log, streaming, and `maven events`.
func TestHomeAssistantTalksToServerEverything(t *testing.T) {
	node, script := testenv.NPMPeer(t, "mcp-server-everything")
	dir := t.TempDir()
	data := filepath.Join(dir, "data")
	cfg := filepath.Join(dir, "maven.json")
	c := fmt.Sprintf(`{"voice": {"wake_words": ["hey maven"]},
		"mcpServers": {"everything": {"command": %q, "args": [%q, "stdio"], "allow_tools": ["echo"]}}}`, node, script)
	if err := os.WriteFile(cfg, []byte(c), 0o600); err != nil {
		t.Fatal(err)
	}
	daemontest.ApproveCommandLines(t, data, cfg)
	d := startDaemon(t, data, "--config", cfg)
	var rows map[string]toolResult
	waitFor(t, 30*time.Second, func() bool {
		rows = toolsByCmd(t, data)
		return rows["mcp everything get-sum"].ID != 0 && rows["mcp everything echo"].ID != 0
	})
	d.stop(t)
	// The owner enables echo and get-sum and gives get-sum a phrase, each behind a step-up.
	enableOffline(t, data, rows["mcp everything get-sum"].ID, rows["mcp everything echo"].ID)
	savePhrasesOffline(t, data, rows["mcp everything get-sum"].ID, "(add | what is) {a} (and | plus) {b}")
	d = startDaemon(t, data, "--config", cfg)
	waitFor(t, 30*time.Second, func() bool { return mcpServers(t, data)["everything"].State == "connected" })
	token, err := maven(t, data, "voice-token", "--rotate")
	if err != nil {
		t.Fatalf("voice-token: %v %s", err, token)
	}
	ha := &haClient{t: t, addr: d.addr, token: strings.TrimSpace(token), user: "6c4e0b9f", conv: "01JF8Q",
		log: []hatest.Message{hatest.Text("system", hatest.SystemPrompt)}, home: hatest.Home(150)}

	if got := ha.say("Hey Maven, add 3 and 4", false); !strings.Contains(got, "7") {
		t.Fatalf("add: %q", got)
	}
	if got := ha.say("what is twenty three plus 0.5", true); !strings.Contains(got, "23.5") {
		t.Fatalf("what is: %q", got)
	}
	if got := ha.say("could you please echo hello there", true); got != "Echo: hello there" {
		t.Fatalf("echo: %q", got)
	}
	if got := ha.say("echo", false); got != "What is the message to echo?" {
		t.Fatalf("echo alone: %q", got)
	}
	if got := ha.say("Good morning!", true); got != "Echo: Good morning" {
		t.Fatalf("the answer: %q", got)
	}
	if got := ha.say("what can I say", false); !strings.Contains(got, "add 3 and 4") || !strings.Contains(got, "echo ⟨message⟩") {
		t.Fatalf("help: %q", got)
	}
	if got := ha.say("open the pod bay doors", false); !strings.Contains(got, "do not know") {
		t.Fatalf("no match: %q", got)
	}

	// maven events shows every turn, the one that matched nothing included, newest first. The
	// feed is written shortly after each reply (in batches), so poll for it.
	want := []string{
		"no_match::open the pod bay doors",
		"help::what can I say",
		"ran:everything_echo:Good morning!",
		"ask:everything_echo:echo",
		"ran:everything_echo:could you please echo hello there",
		"ran:everything_get_sum:what is twenty three plus 0.5",
		"ran:everything_get_sum:Hey Maven, add 3 and 4",
	}
	var turns []string
	var sum map[string]any
	var out string
	deadline := time.Now().Add(30 * time.Second)
	for {
		out, turns, sum = voiceTurns(t, data)
		if strings.Join(turns, "\n") == strings.Join(want, "\n") && hasActions(out, "command_approved", "enabled", "phrases_set", "server_state") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("voice turns, newest first:\n%s\nwant:\n%s\nevents:\n%s", strings.Join(turns, "\n"), strings.Join(want, "\n"), out)
		}
		time.Sleep(50 * time.Millisecond)
	}
	if sum["a"] != 23.0 || sum["b"] != 0.5 {
		t.Fatalf("get-sum's recorded arguments: %v", sum)
	}

	// The text form reads oldest first, and --limit keeps the newest.
	text, err := maven(t, data, "events", "--limit", "2")
	if err != nil {
		t.Fatalf("%v %s", err, text)
	}
	lines := strings.Split(strings.TrimSpace(text), "\n")
	if len(lines) != 3 || !strings.HasPrefix(lines[0], "AT") || !strings.Contains(lines[1], `"what can I say"`) ||
		!strings.Contains(lines[2], "no_match") || !strings.Contains(lines[2], `"open the pod bay doors"`) {
		t.Fatalf("maven events --limit 2:\n%s", text)
	}
	if out, err := maven(t, data, "events", "--limit", "0"); err == nil {
		t.Fatalf("--limit 0 was accepted: %s", out)
	}
}

// voiceTurns reads `maven events --json`: its output, each voice turn (newest first) as
// "outcome:tool:utterance", and the arguments of the first get-sum run listed.
func voiceTurns(t *testing.T, data string) (out string, turns []string, sum map[string]any) {
	t.Helper()
	out, err := maven(t, data, "events", "--json", "--since", "1h", "--limit", "500")
	if err != nil {
		t.Fatalf("maven events: %v %s", err, out)
	}
	var events []activity.Entry
	if err := json.Unmarshal([]byte(out), &events); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	for _, e := range events {
		if e.Action != activity.ActionVoiceTurn {
			continue
		}
		var detail map[string]any
		if err := json.Unmarshal(e.Detail, &detail); err != nil {
			t.Fatal(err)
		}
		if detail["user_id"] != "6c4e0b9f" {
			t.Fatalf("turn without its user: %s", e.Detail)
		}
		turns = append(turns, fmt.Sprintf("%s:%s:%s", e.Outcome, e.Tool, detail["utterance"]))
		if e.Tool == "everything_get_sum" && sum == nil {
			sum, _ = detail["args"].(map[string]any)
		}
	}
	return out, turns, sum
}

// hasActions reports whether `maven events --json` output lists an event of each action.
func hasActions(out string, actions ...string) bool {
	for _, a := range actions {
		if !strings.Contains(out, `"action": "`+a+`"`) {
			return false
		}
	}
	return true
}

// savePhrasesOffline saves a row's phrases with the daemon stopped, as the owner's passkey
// step-up on /tools would.
func savePhrasesOffline(t *testing.T, data string, id int64, text string) {
	t.Helper()
	ctx := context.Background()
	bdb, err := db.Open(ctx, filepath.Join(data, "maven.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer bdb.Close()
	rows := allowlist.NewService(db.NewToolStore(bdb), time.Now)
	row, err := rows.Get(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	book := phrases.NewService(db.NewPhrasesStore(bdb), rows, time.Now)
	if _, err := book.Save(ctx, id, text, authtest.Proof(t, auth.One(auth.ActionSetPhrases, id, row.ApprovalDigest()))); err != nil {
		t.Fatal(err)
	}
}
