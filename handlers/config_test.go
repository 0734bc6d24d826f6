package handlers_test

import (
	"strings"
	"testing"
	"time"

	"maven/app/auth/authtest"
	"maven/app/config"
)

// /tools shows what the running config holds that Maven runs despite, and the errors of a
// reload that refused the file, each with what to do; a config without either says nothing.
func TestToolsShowsConfigProblemsAndARefusedReload(t *testing.T) {
	f := newFixture(t)
	b := f.signUp(authtest.New(testOrigin))
	if body := b.get("/tools").Body.String(); strings.Contains(body, `id="config-problems"`) {
		t.Fatal("a config without problems gets a section")
	}

	f.problems.Set([]config.Problem{
		{Key: "tools[0].name", Msg: `"uptime" was not proposed: the name is taken`, Level: config.LevelError},
		{Key: "mcpServers.m.autoApprove", Msg: "Cline's tools\u202e to run", Level: config.LevelWarning},
	})
	body := b.get("/tools").Body.String()
	for _, want := range []string{
		`id="config-problems"`, `<span class="badge missing">error</span> <code>tools[0].name</code> &#34;uptime&#34; was not proposed`,
		`<span class="badge">warning</span> <code>mcpServers.m.autoApprove</code>`, `<mark class="hidden-char"`,
		`Edit <code>/etc/maven/maven.json</code>, then run <code>maven reload</code>`,
	} {
		if !strings.Contains(body, want) {
			t.Errorf("/tools lacks %q", want)
		}
	}
	if strings.Contains(body, "did not apply it") {
		t.Error("a refusal is shown without one")
	}

	f.problems.Refuse(config.Refusal{At: time.Now(), File: "/srv/maven.json", Errors: []config.Problem{
		{Key: "listen", Msg: "expected host:port", Level: config.LevelError},
		{Key: "mcpServers.x.commnd", Msg: `unknown key (did you mean "command"?)`, Level: config.LevelError},
	}})
	body = b.get("/tools").Body.String()
	for _, want := range []string{
		"Maven read <code>/srv/maven.json</code> again on <time", "did not apply it: it has 2 errors",
		"Maven goes on with the config it had", `<code>listen</code> expected host:port`,
		`<code>mcpServers.x.commnd</code> unknown key (did you mean &#34;command&#34;?)`, "run <code>maven reload</code>",
		"The config that runs has these points to look at",
	} {
		if !strings.Contains(body, want) {
			t.Errorf("/tools with a refused reload lacks %q", want)
		}
	}

	f.problems.Set(nil)
	if body := b.get("/tools").Body.String(); strings.Contains(body, `id="config-problems"`) {
		t.Error("the section stays once a reload applied a config without problems")
	}
}
