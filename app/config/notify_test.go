package config

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestParseNotify: the notify block of docs/design.md#config is read as written, ${VAR} taken
// from the environment, the Home Assistant token's secret reference kept for the vault and
// listed among the secrets the config uses.
func TestParseNotify(t *testing.T) {
	cfg, err := ParseEnv([]byte(`{"notify": {
		"ntfy": "https://ntfy.sh/${TOPIC}",
		"home_assistant": {"url": "http://homeassistant.local:8123", "token": "${secret:ha_token}", "service": "notify.mobile_app_pixel_8"},
		"web_push": {"contact": "mailto:owner@example.com"}}}`),
		func(name string) string { return map[string]string{"TOPIC": "maven-a1b2"}[name] })
	if err != nil {
		t.Fatal(err)
	}
	want := Notify{
		Ntfy:          "https://ntfy.sh/maven-a1b2",
		HomeAssistant: &HomeAssistant{URL: "http://homeassistant.local:8123", Token: "${secret:ha_token}", Service: "notify.mobile_app_pixel_8"},
		WebPush:       WebPush{Contact: "mailto:owner@example.com"},
	}
	if d := cmp.Diff(want, cfg.Notify); d != "" {
		t.Fatalf("notify (-want +got):\n%s", d)
	}
	if len(cfg.Warnings) != 0 {
		t.Errorf("warnings %+v", cfg.Warnings)
	}
	if got := cfg.Notify.HomeAssistant.ServiceName(); got != "mobile_app_pixel_8" {
		t.Errorf("service name %q", got)
	}
	if users := cfg.SecretUsers(); !cmp.Equal(users, map[string][]string{"ha_token": {"notify.home_assistant"}}) {
		t.Errorf("secret users %v", users)
	}
	empty, err := Parse([]byte(`{}`))
	if err != nil || !cmp.Equal(empty.Notify, Notify{}) {
		t.Errorf("no notify block: %+v %v", empty.Notify, err)
	}
	// A token in the clear runs, with a warning that says how to seal it.
	cfg, err = Parse([]byte(`{"notify": {"home_assistant": {"url": "https://ha.example", "token": "eyJhbGciOi", "service": "notify.notify"}}}`))
	if err != nil {
		t.Fatal(err)
	}
	if len(cfg.Warnings) != 1 || cfg.Warnings[0].Key != "notify.home_assistant.token" ||
		!strings.Contains(cfg.Warnings[0].Msg, "maven secret set home_assistant_token") {
		t.Errorf("warnings %+v: want one about the token in the clear", cfg.Warnings)
	}
}

// TestParseNotifyErrors: every mistake in the notify block names its key, an unknown key with
// what it was probably meant to be.
func TestParseNotifyErrors(t *testing.T) {
	ha := func(fields string) string { return `{"notify": {"home_assistant": {` + fields + `}}}` }
	const good = `"url": "http://ha.local:8123", "token": "${secret:t}", "service": "notify.mobile_app_x"`
	for _, c := range []struct{ doc, want string }{
		{`{"notify": []}`, "notify: expected an object"},
		{`{"notify": {"nfty": "https://ntfy.sh/x"}}`, `unknown key "notify.nfty" (did you mean "ntfy"?)`},
		{`{"notify": {"ntfy": 3}}`, "notify.ntfy: expected an ntfy topic's URL"},
		{`{"notify": {"ntfy": "ntfy.sh/mytopic"}}`, `notify.ntfy: expected an ntfy topic's URL such as "https://ntfy.sh/mytopic", got "ntfy.sh/mytopic"`},
		{`{"notify": {"ntfy": "https://ntfy.sh/"}}`, "notify.ntfy: expected an ntfy topic's URL such as \"https://ntfy.sh/mytopic\", got \"https://ntfy.sh/\": the topic"},
		{`{"notify": {"ntfy": "https://ntfy.sh/a?auth=x"}}`, "notify.ntfy: expected an ntfy topic's URL such as \"https://ntfy.sh/mytopic\", got \"https://ntfy.sh/a?auth=x\": without a ?query"},
		{`{"notify": {"ntfy": "https://me:pw@ntfy.sh/a"}}`, "notify.ntfy: expected an ntfy topic's URL such as \"https://ntfy.sh/mytopic\", got \"https://me:pw@ntfy.sh/a\": a user name or password"},
		{`{"notify": {"ntfy": "https://ntfy.sh/${secret:topic}"}}`, "notify.ntfy: expected the URL as it is: it cannot refer to a secret"},
		{`{"notify": {"ntfy": "https://ntfy.sh/${UNSET}"}}`, "notify.ntfy: ${UNSET} is not set"},
		{`{"notify": {"home_assistant": "http://ha.local"}}`, "notify.home_assistant: expected an object"},
		{ha(good + `, "entity": "x"`), `unknown key "notify.home_assistant.entity"`},
		{ha(`"token": "${secret:t}", "service": "notify.x"`), "notify.home_assistant.url: required"},
		{ha(`"url": "ftp://ha.local", "token": "${secret:t}", "service": "notify.x"`), `notify.home_assistant.url: expected Home Assistant's address such as "http://homeassistant.local:8123", got "ftp://ha.local"`},
		{ha(`"url": "http://ha.local:8123/lovelace/0", "token": "${secret:t}", "service": "notify.x"`), "notify.home_assistant.url: expected Home Assistant's address such as \"http://homeassistant.local:8123\", got \"http://ha.local:8123/lovelace/0\": write the address alone"},
		{ha(`"url": "http://ha.local", "service": "notify.x"`), "notify.home_assistant.token: required"},
		{ha(`"url": "http://ha.local", "token": "${secret:bad name}", "service": "notify.x"`), "notify.home_assistant.token: malformed secret reference"},
		{ha(`"url": "http://ha.local", "token": "${secret:t}"`), "notify.home_assistant.service: required"},
		{ha(`"url": "http://ha.local", "token": "${secret:t}", "service": "mobile_app_x"`), `notify.home_assistant.service: expected a notify service such as "notify.mobile_app_pixel_8", got "mobile_app_x"; did you mean "notify.mobile_app_x"?`},
		{ha(`"url": "http://ha.local", "token": "${secret:t}", "service": "light.turn_on"`), `notify.home_assistant.service: expected a notify service`},
		{`{"notify": {"web_push": {"contact": "owner@example.com"}}}`, `notify.web_push.contact: expected a "mailto:" address`},
		{`{"notify": {"web_push": {"contact": "mailto:maven@localhost"}}}`, `notify.web_push.contact: expected a "mailto:" address such as "mailto:you@example.com" or an "https:" URL, got "mailto:maven@localhost": push services refuse a contact at localhost`},
		{`{"notify": {"web_push": {"contact": "http://maven.example"}}}`, `notify.web_push.contact: expected a "mailto:" address`},
		{`{"notify": {"web_push": {"mail": "x"}}}`, `unknown key "notify.web_push.mail"`},
	} {
		_, err := ParseEnv([]byte(c.doc), func(string) string { return "" })
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s:\n got %v\nwant %q", c.doc, err, c.want)
		}
	}
}
