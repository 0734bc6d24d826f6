package handlers_test

import (
	"encoding/base64"
	"fmt"
	"net/http"
	"net/url"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"maven/app/activity"
	"maven/app/allowlist"
	"maven/app/auth"
	"maven/app/auth/authtest"
)

// entryRE finds each entry of /activity, its action and outcome.
var entryRE = regexp.MustCompile(`<li class="entry[^"]*" id="event-(\d+)" data-action="([^"]*)"(?: data-outcome="([^"]*)")?`)

// activityEntry is one entry as /activity renders it.
type activityEntry struct{ id, action, outcome string }

func entriesOf(page string) []activityEntry {
	var out []activityEntry
	for _, m := range entryRE.FindAllStringSubmatch(page, -1) {
		out = append(out, activityEntry{m[1], m[2], m[3]})
	}
	return out
}

// turn is a voice turn as the voice service records it.
func turn(at time.Time, outcome, tool, utterance string, args map[string]any) activity.Event {
	d := map[string]any{"utterance": utterance, "conversation": "c1", "user_id": "u1"}
	if args != nil {
		d["args"] = args
	}
	return activity.Event{At: at, Actor: "voice", Action: activity.ActionVoiceTurn, Outcome: outcome, Tool: tool, Detail: d}
}

// TestActivityShowsEveryKindOfEvent: /activity lists, newest first, voice turns (no_match
// included) with their words and bound arguments, an enable made on /tools, a lock and an
// unlock, a server's state change and a command line's approval; what came from outside Maven
// is escaped and its hidden characters are shown. Signed out, the page is not shown.
func TestActivityShowsEveryKindOfEvent(t *testing.T) {
	f := newFixture(t)
	a := authtest.New(testOrigin)
	if got := f.browser().get("/activity"); got.Code != http.StatusSeeOther || !strings.HasPrefix(got.Header().Get("Location"), "/login") {
		t.Fatalf("signed out: %d %v", got.Code, got.Header())
	}
	b := f.signUp(a)
	tool := b.enabledMCP(a, "calc", "add", "Adds two numbers.", addSchema)
	now := f.clock.Now()
	err := f.feed.Append(t.Context(),
		turn(now, "ran", tool.Name, "add 3 and 4", map[string]any{"a": 3, "b": 4}),
		activity.Event{At: now, Actor: "system", Action: activity.ActionServerState,
			Detail: map[string]any{"server": "calc", "from": "connected", "to": "failed", "error": "dial: <refused>\u202e"}},
		activity.Event{At: now, Actor: "owner", Action: activity.ActionLocked},
		activity.Event{At: now, Actor: "owner", Action: activity.ActionUnlocked},
		turn(now, "no_match", "", "open the <b>pod</b> bay\u200b doors", nil),
	)
	if err != nil {
		t.Fatal(err)
	}
	command := f.pendingCommand("notes", "node notes-server.js")
	b.mustStepUp(a, auth.One(auth.ActionAddServer, command, ""))
	mustOK(t, "approve", b.htmx(http.MethodPost, "/servers/commands/"+itoa(command)+"/approve", nil))

	page := b.get("/activity")
	mustOK(t, "activity", page)
	text := page.Body.String()
	got := entriesOf(text)
	var actions []string
	for _, e := range got {
		actions = append(actions, e.action+"/"+e.outcome)
	}
	want := "command_approved/ voice_turn/no_match unlocked/ locked/ server_state/ voice_turn/ran enabled/ proposed/ passkey_added/ setup_link_issued/"
	if strings.Join(actions, " ") != want {
		t.Fatalf("entries, newest first:\n%s\nwant:\n%s", strings.Join(actions, " "), want)
	}
	for _, want := range []string{
		`<a href="/activity" aria-current="page">Activity</a>`,
		"“add 3 and 4”", `<dt>a</dt><dd><code>3</code></dd>`, `<dt>b</dt><dd><code>4</code></dd>`, "ran", "matched nothing",
		"open the &lt;b&gt;pod&lt;/b&gt; bay", `<mark class="hidden-char"`, "dial: &lt;refused&gt;", "connected → failed",
		"node notes-server.js", `data-tool="calc_add"`, `href="/activity?tool=calc_add"`, "Enabled", "by owner",
		`<time datetime="` + now.UTC().Format(time.RFC3339) + `">` + now.Local().Format("2 Jan 2006, 15:04") + "</time>",
	} {
		if !strings.Contains(text, want) {
			t.Errorf("/activity lacks %q", want)
		}
	}
	if strings.Contains(text, "<b>pod") || strings.Contains(text, "\u202e") || strings.Contains(text, "\u200b") {
		t.Error("text from outside Maven reached the page unescaped or with hidden characters")
	}
}

// TestActivityFiltersAndPages: the filters (outcome, tool, day) select what they say, as a
// full page and, for htmx, as the list alone; "Older" pages through the feed with Next until
// the end, each page keeping the filters; a filter that cannot be read is said and left out.
func TestActivityFiltersAndPages(t *testing.T) {
	f := newFixture(t)
	b := f.signUp(authtest.New(testOrigin))
	today := f.clock.Now()
	yesterday := today.AddDate(0, 0, -1)
	var events []activity.Event
	for i := range 120 {
		events = append(events, turn(today, "ran", "calc_add", fmt.Sprintf("add %d and 1", i), map[string]any{"a": i, "b": 1}))
		if i%10 == 0 {
			events = append(events, turn(today, "no_match", "", fmt.Sprintf("nonsense %d", i), nil))
		}
	}
	events = append(events, turn(yesterday, "confirm", "calc_wipe", "wipe everything", nil))
	if err := f.feed.Append(t.Context(), events...); err != nil {
		t.Fatal(err)
	}

	// No filter: 50 a page, newest first, then Older until the end.
	var seen []activityEntry
	next := "/activity"
	for pages := 0; next != ""; pages++ {
		if pages > 5 {
			t.Fatal("the pages never end")
		}
		res := b.htmx(http.MethodGet, next, nil)
		mustOK(t, next, res)
		text := res.Body.String()
		if strings.Contains(text, "<html") || !strings.Contains(text, `id="activity-list"`) {
			t.Fatalf("htmx got more than the list:\n%s", text)
		}
		got := entriesOf(text)
		if len(got) > 50 {
			t.Fatalf("page %d holds %d entries", pages, len(got))
		}
		seen = append(seen, got...)
		if pages > 0 && !strings.Contains(text, `rel="first">Newest</a>`) {
			t.Errorf("page %d offers no way back to the newest", pages)
		}
		next = olderURL(text)
	}
	if len(seen) != 135 { // and the owner's passkey and setup link
		t.Fatalf("paged through %d entries, want 135", len(seen))
	}
	// By time, then id: yesterday's turn, appended last, is the oldest.
	if last := seen[len(seen)-1]; last.outcome != "confirm" {
		t.Fatalf("the last entry is %+v, want yesterday's turn", last)
	}
	for i := 1; i < len(seen)-1; i++ {
		if atoi(t, seen[i].id) >= atoi(t, seen[i-1].id) {
			t.Fatalf("entries out of order at %d: %s after %s", i, seen[i].id, seen[i-1].id)
		}
	}

	// By outcome, across pages.
	noMatch := b.get("/activity?outcome=no_match")
	mustOK(t, "outcome filter", noMatch)
	got := entriesOf(noMatch.Body.String())
	if len(got) != 12 {
		t.Fatalf("outcome=no_match: %d entries, want 12", len(got))
	}
	for _, e := range got {
		if e.outcome != "no_match" {
			t.Fatalf("outcome=no_match shows %+v", e)
		}
	}
	if !strings.Contains(noMatch.Body.String(), `<option value="no_match" selected>matched nothing</option>`) {
		t.Error("the form does not show the filter it applied")
	}

	// By tool: 120 runs over three pages, each Older link keeping the filter.
	res := b.get("/activity?tool=calc_add")
	older := olderURL(res.Body.String())
	if n := len(entriesOf(res.Body.String())); n != 50 || !strings.Contains(older, "tool=calc_add") {
		t.Fatalf("tool=calc_add: %d entries, older %q", n, older)
	}

	// By day: only yesterday's turn.
	day := yesterday.Local().Format(time.DateOnly)
	res = b.get("/activity?day=" + day)
	if got := entriesOf(res.Body.String()); len(got) != 1 || got[0].outcome != "confirm" {
		t.Fatalf("day=%s: %+v", day, got)
	}
	if !strings.Contains(res.Body.String(), `value="`+day+`"`) {
		t.Error("the day field lost its value")
	}

	// A filter that cannot be read is said, and left out; the others still apply.
	res = b.get("/activity?day=yesterday&outcome=no_match")
	if res.Code != http.StatusUnprocessableEntity || !strings.Contains(res.Body.String(), "the day must be a date") ||
		len(entriesOf(res.Body.String())) != 12 {
		t.Fatalf("a bad day: %d", res.Code)
	}
	res = b.get("/activity?outcome=%3Cscript%3E")
	if res.Code != http.StatusUnprocessableEntity || strings.Contains(res.Body.String(), "<script>") {
		t.Fatalf("an unknown outcome: %d", res.Code)
	}
	if res := b.get("/activity?tool=nothing+like+it"); !strings.Contains(res.Body.String(), "Nothing matches these filters.") {
		t.Error("an empty result says nothing")
	}
}

var olderRE = regexp.MustCompile(`<a href="([^"]+)" hx-get="[^"]+" hx-target="#activity-list" hx-swap="outerHTML" hx-push-url="true" rel="next">Older</a>`)

// olderURL is the list's Older link, "" when it has none.
func olderURL(page string) string {
	m := olderRE.FindStringSubmatch(page)
	if m == nil {
		return ""
	}
	return strings.ReplaceAll(m[1], "&amp;", "&")
}

func atoi(t *testing.T, s string) int {
	t.Helper()
	var n int
	if _, err := fmt.Sscan(s, &n); err != nil {
		t.Fatal(err)
	}
	return n
}

// TestSecurityEventsAreRecorded: a setup link issued, a passkey added (by the setup link and on
// the passkeys page), renamed and removed, a secret set and deleted, and a new recovery code
// are each an entry of the feed, by whom and naming what changed; none records the secret's
// value, the token or the code. /activity shows them in words.
func TestSecurityEventsAreRecorded(t *testing.T) {
	vf := newVaultFixture(t, "")
	laptop, phone := authtest.New(testOrigin), authtest.New(testOrigin)
	b, code := vf.setUp(laptop)
	b.addPasskey(laptop, phone, "Phone")
	mustOK(t, "rename", b.htmx(http.MethodPost, "/passkeys/2/rename", url.Values{"name": {"Old phone"}}))
	b.mustStepUp(laptop, auth.One(auth.ActionRemovePasskey, 2, ""))
	mustOK(t, "remove", b.htmx(http.MethodPost, "/passkeys/2/remove", url.Values{}))
	const value = "s3cr3t-value-never-recorded"
	b.mustStepUp(laptop, auth.One(auth.ActionSetSecret, 0, "ha_token"))
	mustOK(t, "set ha_token", b.htmx(http.MethodPost, "/secrets", url.Values{"name": {"ha_token"}, "value": {value}}))
	b.mustStepUp(laptop, auth.One(auth.ActionDeleteSecret, 0, "ha_token"))
	mustOK(t, "delete ha_token", b.htmx(http.MethodPost, "/secrets/delete", url.Values{"name": {"ha_token"}}))
	b.mustStepUp(laptop, auth.One(auth.ActionRotateRecovery, 0, ""))
	rotated := b.htmx(http.MethodPost, "/secrets/recovery", nil)
	mustOK(t, "new recovery code", rotated)
	token := vf.setupToken()

	page, err := vf.feed.Query(t.Context(), activity.Filter{Limit: activity.MaxLimit})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	all := ""
	for _, e := range page.Entries {
		if e.Action == activity.ActionVoiceTurn || e.Action == activity.ActionLocked || e.Action == activity.ActionUnlocked {
			continue
		}
		got = append(got, e.Actor+" "+e.Action+" "+string(e.Detail))
		all += string(e.Detail)
	}
	slices.Reverse(got)
	want := []string{
		`cli setup_link_issued {"expires":`,
		`owner passkey_added {"can_unlock":true,"credential":"` + base64.RawURLEncoding.EncodeToString(laptop.Credentials()[0].ID) + `","passkey":1,"passkey_name":"Phone","via":"a setup link"}`,
		`owner passkey_added {"can_unlock":true,"credential":"` + base64.RawURLEncoding.EncodeToString(phone.Credentials()[0].ID) + `","passkey":2,"passkey_name":"Phone","via":"the passkeys page"}`,
		`owner passkey_renamed {"old_name":"Phone","passkey":2,"passkey_name":"Old phone"}`,
		`owner passkey_removed {"credential":"` + base64.RawURLEncoding.EncodeToString(phone.Credentials()[0].ID) + `","passkey":2,"passkey_name":"Old phone"}`,
		`owner secret_set {"secret":"ha_token"}`,
		`owner secret_deleted {"secret":"ha_token"}`,
		`owner recovery_code_rotated {}`,
		`cli setup_link_issued {"expires":`,
	}
	if len(got) != len(want) {
		t.Fatalf("the feed holds\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	for i := range want {
		if !strings.HasPrefix(got[i], want[i]) {
			t.Errorf("entry %d: %s\nwant %s", i, got[i], want[i])
		}
	}
	newCode := rotated.Body.String()
	newCode = newCode[strings.Index(newCode, "<code data-recovery-code>")+len("<code data-recovery-code>"):]
	newCode = strings.ReplaceAll(newCode[:strings.Index(newCode, "</code>")], "<wbr>", "")
	for what, secret := range map[string]string{"the secret's value": value, "the first recovery code": code,
		"the new recovery code": newCode, "the setup token": token} {
		if strings.Contains(all, secret) {
			t.Errorf("the feed records %s", what)
		}
	}

	body := b.get("/activity").Body.String()
	for _, label := range []string{"Setup link issued", "Passkey added", "Passkey renamed", "Passkey removed", "Secret set",
		"Secret deleted", "New recovery code", "<dt>Secret</dt><dd>ha_token</dd>", "<dt>Renamed from</dt><dd>Phone</dd>",
		"<dt>Passkey</dt><dd>Old phone</dd>", "<dt>Added through</dt><dd>the passkeys page</dd>", "<dt>Valid until</dt>"} {
		if !strings.Contains(body, label) {
			t.Errorf("/activity lacks %q", label)
		}
	}
}

// TestActivityKindsRepliesAndDiscoveries: the 60 tools one listing of "tasks" proposed are one
// line, "tasks proposed 60 tools — show", even where a page of 50 would have cut it, and "show"
// is /tools with only those 60; a voice turn shows what Maven said back; the Voice / Changes /
// Servers switch is part of the GET form and of every link it leads to.
func TestActivityKindsRepliesAndDiscoveries(t *testing.T) {
	f := newFixture(t)
	b := f.signUp(authtest.New(testOrigin))
	ctx := t.Context()
	var older []activity.Event
	for i := range 55 {
		older = append(older, turn(f.clock.Now(), "no_match", "", fmt.Sprintf("an older turn %d", i), nil))
	}
	if err := f.feed.Append(ctx, older...); err != nil {
		t.Fatal(err)
	}
	f.clock.Advance(time.Minute)
	var ps []allowlist.Proposal
	for i := range 60 {
		name := fmt.Sprintf("task_tool_%02d", i)
		ps = append(ps, allowlist.Proposal{Name: "tasks_" + name, Cmd: []string{"mcp", "tasks", name}, Scope: allowlist.MCPScope("tasks"),
			ReadOnly: true, Source: allowlist.SourceDiscovery, Provenance: "discovered on tasks", Actor: "discovery"})
	}
	var proposed []allowlist.Tool
	if err := f.tools.Update(ctx, func(tx *allowlist.Tx) (err error) {
		proposed, err = tx.ProposeNew(ctx, ps)
		return err
	}); err != nil {
		t.Fatal(err)
	}
	f.clock.Advance(time.Minute)
	var newer []activity.Event
	for i := range 30 {
		e := turn(f.clock.Now(), "ran", "calc_add", fmt.Sprintf("add %d and 1", i), nil)
		e.Detail["reply"] = fmt.Sprintf("It is %d.", i+1)
		newer = append(newer, e)
	}
	newer = append(newer, activity.Event{At: f.clock.Now(), Actor: "system", Action: activity.ActionServerState,
		Detail: map[string]any{"server": "tasks", "from": "connecting", "to": "connected"}})
	if err := f.feed.Append(ctx, newer...); err != nil {
		t.Fatal(err)
	}

	first := b.get("/activity").Body.String()
	ids := fmt.Sprintf("%d-%d", proposed[0].ID, proposed[59].ID)
	for _, want := range []string{
		`<span class="what"><strong>tasks</strong> proposed 60 tools</span>`,
		`— <a class="entry-tools" href="/tools?ids=` + ids + `">show</a>`,
		`<p class="reply"><span class="who">Maven:</span> “It is 30.”</p>`,
		`<input type="radio" id="activity-kind-0" name="kind" value="" checked>`, `<label for="activity-kind-1">Voice</label>`,
		`<label for="activity-kind-2">Agents</label>`, `<label for="activity-kind-3">Approvals</label>`,
		`<label for="activity-kind-4">Changes</label>`, `<label for="activity-kind-5">Servers</label>`,
	} {
		if !strings.Contains(first, want) {
			t.Errorf("/activity lacks %q", want)
		}
	}
	if n := strings.Count(first, `data-action="proposed"`); n != 1 {
		t.Errorf("the discovery is %d lines, want 1", n)
	}
	if got := entriesOf(b.get(olderURL(first)).Body.String()); len(got) != 50 || got[0].outcome != "no_match" {
		t.Errorf("the page after the discovery: %+v, want the older turns", got)
	}

	chosen := b.get("/tools?ids=" + ids).Body.String()
	if !strings.Contains(chosen, "Only the 60 tools of one\n    discovery.") || !strings.Contains(chosen, `data-state-filter="proposed"`) ||
		strings.Count(chosen, `data-tool-name="tasks_task_tool_`) != 50 || strings.Contains(chosen, `data-tool-name="test`) {
		t.Errorf("/tools?ids=%s does not show only the discovery's tools:\n%s", ids, chosen)
	}
	if !strings.Contains(chosen, `href="/tools?ids=`+ids+`&amp;page=2"`) {
		t.Error("the chosen tools' second page loses the choice")
	}

	for kind, want := range map[string]string{
		"voice":   "voice_turn",
		"changes": "proposed",
		"servers": "server_state",
	} {
		page := b.get("/activity?kind=" + kind).Body.String()
		for _, e := range entriesOf(page) {
			if e.action != want && !(kind == "changes" && e.action == "proposed") {
				t.Errorf("kind=%s shows a %s entry", kind, e.action)
			}
		}
		if len(entriesOf(page)) == 0 || !strings.Contains(page, `value="`+kind+`" checked>`) {
			t.Errorf("kind=%s: %d entries, or the switch does not show it", kind, len(entriesOf(page)))
		}
		if older := olderURL(page); older != "" && !strings.Contains(older, "kind="+kind) {
			t.Errorf("kind=%s: Older is %q", kind, older)
		}
	}
	if voice := b.get("/activity?kind=voice"); !strings.Contains(olderURL(voice.Body.String()), "kind=voice") {
		t.Error("85 voice turns make two pages, the second of the same kind")
	}
	if r := b.get("/activity?kind=everything"); r.Code != http.StatusUnprocessableEntity || !strings.Contains(r.Body.String(), "there is no kind of entry") {
		t.Errorf("an unknown kind: %d", r.Code)
	}
}
