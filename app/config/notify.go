package config

import (
	"fmt"
	"maps"
	"net/url"
	"regexp"
	"slices"
	"strings"
)

// Notify says how the owner is told of a call that waits for their approval (the "notify"
// block, docs/design.md#config and docs/design.md#rule-30). Web Push needs no config: the
// browsers that subscribed on Maven's pages get every notice. A notice carries only the tool's
// name and the link to its approval page.
type Notify struct {
	// Ntfy is an ntfy topic's URL, such as "https://ntfy.sh/mytopic"; "" for none.
	Ntfy string
	// HomeAssistant is a notify service of Home Assistant, called through its REST API; nil
	// for none.
	HomeAssistant *HomeAssistant
	// WebPush tunes Web Push.
	WebPush WebPush
}

// HomeAssistant is the "notify.home_assistant" block: where Home Assistant is, its long-lived
// access token, and the notify service to call.
type HomeAssistant struct {
	URL string // Home Assistant's address, such as "http://homeassistant.local:8123"
	// Token is a long-lived access token; it may hold secret references (${secret:NAME}),
	// expanded only while the vault is open.
	Token string
	// Service is the notify service as Home Assistant names it, "notify.mobile_app_pixel_8".
	Service string
}

// ServiceName is the service's name without its domain, as it goes in the REST API's path
// (/api/services/notify/NAME).
func (h HomeAssistant) ServiceName() string { return strings.TrimPrefix(h.Service, "notify.") }

// WebPush is the "notify.web_push" block.
type WebPush struct {
	// Contact is the VAPID subject push services are given (RFC 8292): a "mailto:" address or
	// an "https:" URL. "" means the first https origin. Apple's push service refuses a subject
	// it cannot resolve, such as an address at localhost.
	Contact string
}

// SecretRefs returns the names of the secrets the notify block refers to, sorted and without
// duplicates.
func (n Notify) SecretRefs() []string {
	if n.HomeAssistant == nil {
		return nil
	}
	refs, _ := findRefs(n.HomeAssistant.Token)
	var names []string
	for _, r := range refs {
		names = append(names, r.name)
	}
	slices.Sort(names)
	return slices.Compact(names)
}

// homeAssistantUser is who uses the secrets of the Home Assistant token, as /secrets and
// `maven secret list` name it.
const homeAssistantUser = "notify.home_assistant"

// Keys of the notify block and its parts.
var (
	notifyKeys        = []string{"ntfy", "home_assistant", "web_push"}
	homeAssistantKeys = []string{"url", "token", "service"}
	webPushKeys       = []string{"contact"}
)

// notifyService is a notify service's name as Home Assistant writes it.
var notifyService = regexp.MustCompile(`^notify\.[a-z0-9_]+$`)

func (d *decoder) notify(raw []byte, path string) Notify {
	obj, ok := d.object(raw, path)
	if !ok {
		return Notify{}
	}
	var n Notify
	for _, key := range slices.Sorted(maps.Keys(obj)) {
		p, raw := keyPath(path, key), obj[key]
		switch key {
		case "ntfy":
			n.Ntfy = d.expandVars(d.str(raw, p, `an ntfy topic's URL such as "https://ntfy.sh/mytopic"`), p, nil)
		case "home_assistant":
			n.HomeAssistant = d.homeAssistant(raw, p)
		case "web_push":
			n.WebPush = d.webPush(raw, p)
		default:
			d.unknown(path, key, notifyKeys)
		}
	}
	return n
}

func (d *decoder) homeAssistant(raw []byte, path string) *HomeAssistant {
	obj, ok := d.object(raw, path)
	if !ok {
		return nil
	}
	h := &HomeAssistant{}
	for _, key := range slices.Sorted(maps.Keys(obj)) {
		p, raw := keyPath(path, key), obj[key]
		switch key {
		case "url":
			h.URL = d.expandVars(d.str(raw, p, `Home Assistant's address such as "http://homeassistant.local:8123"`), p, nil)
		case "token":
			v := d.str(raw, p, `a long-lived access token, best sealed: "${secret:NAME}"`)
			if !strings.Contains(v, "${") {
				d.sealNudge(p, key, v, "this token is kept in the clear in the config file", "home_assistant_token")
			}
			h.Token = d.expandVars(v, p, nil)
		case "service":
			h.Service = d.str(raw, p, `a notify service such as "notify.mobile_app_pixel_8"`)
		default:
			d.unknown(path, key, homeAssistantKeys)
		}
	}
	return h
}

func (d *decoder) webPush(raw []byte, path string) WebPush {
	obj, ok := d.object(raw, path)
	if !ok {
		return WebPush{}
	}
	var w WebPush
	for _, key := range slices.Sorted(maps.Keys(obj)) {
		p, raw := keyPath(path, key), obj[key]
		switch key {
		case "contact":
			w.Contact = d.str(raw, p, `a "mailto:" address or an "https:" URL`)
		default:
			d.unknown(path, key, webPushKeys)
		}
	}
	return w
}

// validate names every key of the notify block at fault, under path.
func (n Notify) validate(path string) []*Error {
	var errs []*Error
	add := func(key, msg string) {
		if msg != "" {
			errs = append(errs, errorf(key, msg))
		}
	}
	if n.Ntfy != "" {
		add(keyPath(path, "ntfy"), checkNtfyURL(n.Ntfy))
	}
	if h := n.HomeAssistant; h != nil {
		p := keyPath(path, "home_assistant")
		add(keyPath(p, "url"), checkHomeAssistantURL(h.URL))
		if h.Token == "" {
			add(keyPath(p, "token"), `required: a long-lived access token (Home Assistant: your profile, Security), best sealed as "${secret:home_assistant_token}"`)
		} else if _, msg := findRefs(h.Token); msg != "" {
			add(keyPath(p, "token"), msg)
		}
		add(keyPath(p, "service"), checkNotifyService(h.Service))
	}
	if c := n.WebPush.Contact; c != "" {
		add(keyPath(keyPath(path, "web_push"), "contact"), checkContact(c))
	}
	return errs
}

// ntfyTopic is the name of an ntfy topic (ntfy's own rule).
var ntfyTopic = regexp.MustCompile(`^[-_A-Za-z0-9]{1,64}$`)

// checkNtfyURL checks an ntfy topic's URL, returning "" if it is fine: the server's address
// (below a path, for one behind a proxy) and the topic as the last segment.
func checkNtfyURL(raw string) string {
	bad := `expected an ntfy topic's URL such as "https://ntfy.sh/mytopic", got ` + quoteValue(raw)
	if msg := checkPlainURL(raw, bad); msg != "" {
		return msg
	}
	u, _ := url.Parse(raw)
	topic := u.Path[strings.LastIndexByte(u.Path, '/')+1:]
	if !ntfyTopic.MatchString(topic) {
		return bad + ": the topic, the URL's last segment, is 1 to 64 of A-Z a-z 0-9 _ -"
	}
	return ""
}

// checkHomeAssistantURL checks Home Assistant's address, returning "" if it is fine.
func checkHomeAssistantURL(raw string) string {
	if raw == "" {
		return `required: Home Assistant's address, such as "http://homeassistant.local:8123"`
	}
	bad := `expected Home Assistant's address such as "http://homeassistant.local:8123", got ` + quoteValue(raw)
	if msg := checkPlainURL(raw, bad); msg != "" {
		return msg
	}
	if u, _ := url.Parse(raw); u.Path != "" && u.Path != "/" {
		return bad + ": write the address alone, without a path"
	}
	return ""
}

// checkPlainURL checks that raw is an absolute http or https URL without credentials, query,
// fragment or secret reference, returning bad (or why) when it is not.
func checkPlainURL(raw, bad string) string {
	if strings.Contains(raw, refOpen) {
		return "expected the URL as it is: it cannot refer to a secret"
	}
	u, err := url.Parse(raw)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Opaque != "" || u.Hostname() == "" {
		return bad
	}
	switch {
	case u.User != nil:
		return bad + ": a user name or password in the URL is not supported"
	case u.RawQuery != "" || u.ForceQuery:
		return bad + ": without a ?query"
	case u.Fragment != "" || strings.Contains(raw, "#"):
		return bad + ": without a #fragment"
	}
	return ""
}

// checkNotifyService checks a Home Assistant notify service's name, returning "" if it is fine.
func checkNotifyService(s string) string {
	if s == "" {
		return `required: the notify service to call, such as "notify.mobile_app_pixel_8" (Home Assistant: Developer tools, Actions)`
	}
	if notifyService.MatchString(s) {
		return ""
	}
	msg := `expected a notify service such as "notify.mobile_app_pixel_8", got ` + quoteValue(s)
	if notifyService.MatchString("notify." + s) {
		msg += fmt.Sprintf("; did you mean %q?", "notify."+s)
	}
	return msg
}

// checkContact checks a VAPID subject, returning "" if it is fine.
func checkContact(c string) string {
	bad := `expected a "mailto:" address such as "mailto:you@example.com" or an "https:" URL, got ` + quoteValue(c)
	u, err := url.Parse(c)
	if err != nil {
		return bad
	}
	var host string
	switch u.Scheme {
	case "mailto":
		var ok bool
		if _, host, ok = strings.Cut(u.Opaque, "@"); !ok || host == "" {
			return bad
		}
	case "https":
		host = u.Hostname()
		if host == "" {
			return bad
		}
	default:
		return bad
	}
	if h := strings.ToLower(host); h == "localhost" || strings.HasSuffix(h, ".localhost") {
		return bad + ": push services refuse a contact at localhost (Apple's does); give one they can reach"
	}
	return ""
}
