package handlers

import (
	"encoding/json"
	"fmt"
	"maps"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"maven/app/activity"
	"maven/app/agents"
	"maven/app/allowlist"
	"maven/app/clients"
	"maven/app/mcp"
	"maven/app/notify"
	"maven/app/pending"
	"maven/app/voice"
	"maven/internal/enum"
	"maven/views"
)

// How /activity shows one entry of the feed: its action and outcome in words and tone, and the
// facts its detail records.

// outcomeTones are the voice outcomes the filter offers, in the order a turn meets them, and
// how each is shown: "ok", "calm" or "trouble". Their words are voice.Outcome.Words.
var outcomeTones = enum.Table[voice.Outcome, string]{
	{Member: voice.OutcomeRan, Said: "ok"},
	{Member: voice.OutcomeConfirm, Said: "calm"},
	{Member: voice.OutcomeAsk, Said: "calm"},
	{Member: voice.OutcomeCancelled, Said: "calm"},
	{Member: voice.OutcomeNeedsArgs, Said: "calm"},
	{Member: voice.OutcomeNoMatch, Said: "calm"},
	{Member: voice.OutcomeHelp, Said: "calm"},
	{Member: voice.OutcomeRefused, Said: "trouble"},
	{Member: voice.OutcomeLocked, Said: "trouble"},
	{Member: voice.OutcomeError, Said: "trouble"},
}

// agentOutcomeTones are how an agent's call's outcome is shown; their words are
// agents.Outcome.Words.
var agentOutcomeTones = enum.Table[agents.Outcome, string]{
	{Member: agents.OutcomeRan, Said: "ok"},
	{Member: agents.OutcomeNeedsOwner, Said: "calm"},
	{Member: agents.OutcomeBadArguments, Said: "calm"},
	{Member: agents.OutcomeOutsideLimits, Said: "calm"},
	{Member: agents.OutcomeChanged, Said: "calm"},
	{Member: agents.OutcomeLocked, Said: "trouble"},
	{Member: agents.OutcomeFailed, Said: "trouble"},
}

// approvalEventTones are how a pending call's events are shown; their words are
// pending.Event.Words.
var approvalEventTones = enum.Table[pending.Event, string]{
	{Member: pending.EventCreated, Said: "calm"},
	{Member: pending.EventApproved, Said: "ok"},
	{Member: pending.EventDenied, Said: "calm"},
	{Member: pending.EventExpired, Said: "calm"},
	{Member: pending.EventVoided, Said: "calm"},
	{Member: pending.EventRan, Said: "ok"},
	{Member: pending.EventInterrupted, Said: "trouble"},
}

// actionLabels name the feed's actions in words; any other is shown as it is recorded.
var actionLabels = map[string]string{
	activity.ActionVoiceTurn:       "Voice",
	activity.ActionAgentCall:       "Agent call",
	activity.ActionApproval:        "Pending call",
	activity.ActionLocked:          "Locked",
	activity.ActionUnlocked:        "Unlocked",
	activity.ActionServerState:     "Server",
	"command_approved":             "Command line approved",
	"proposed":                     "Proposed",
	"reproposed":                   "Proposed again",
	"updated":                      "Updated by its server",
	"redefined":                    "Redefined by its server",
	"fingerprint_adopted":          "Fingerprint recorded",
	"enabled":                      "Enabled",
	"disabled":                     "Disabled",
	"withdrawn":                    "Withdrawn",
	"phrases_set":                  "Phrases saved",
	"limits_set":                   "Limits saved",
	"confirm_set":                  "Confirmation set",
	activity.ActionPasskeyAdded:    "Passkey added",
	activity.ActionPasskeyRenamed:  "Passkey renamed",
	activity.ActionPasskeyRemoved:  "Passkey removed",
	activity.ActionSecretSet:       "Secret set",
	activity.ActionSecretDeleted:   "Secret deleted",
	activity.ActionRecoveryRotated: "New recovery code",
	activity.ActionSetupLinkIssued: "Setup link issued",
	clients.ActionAdded:            "Client token issued",
	clients.ActionConsented:        "Client allowed",
	clients.ActionDenied:           "Client denied",
	clients.ActionToolsSet:         "Client's tools changed",
	clients.ActionRevoked:          "Client revoked",
	clients.ActionTokenReused:      "Client's token reused: its tokens revoked",
	// docs/design.md#rule-30: each delivery of a notification, and the browsers subscribed.
	activity.ActionNotified:         "Notified",
	activity.ActionNotifyFailed:     "Not notified",
	activity.ActionPushSubscribed:   "Notifications turned on",
	activity.ActionPushUnsubscribed: "Notifications turned off",
}

// entryView is the view of one event: its action and outcome in words, a voice turn's words
// and bound arguments, and the rest of what it records, everything from outside Maven with its
// hidden characters spelled out (docs/design.md#rule-25).
func entryView(e activity.Entry) views.ActivityEntry {
	v := views.ActivityEntry{ID: e.ID, At: timeOf(e.At), Action: e.Action, Actor: e.Actor, Tool: e.Tool, Outcome: e.Outcome}
	v.What = actionLabels[e.Action]
	if v.What == "" {
		v.What = e.Action
	}
	if e.Tool != "" {
		v.ToolText, v.ToolURL = text(e.Tool), activityView{tool: e.Tool}.url(0)
	}
	switch {
	case e.Action == activity.ActionAgentCall:
		v.OutcomeLabel = agents.Outcome(e.Outcome).Words()
		v.Tone, _ = agentOutcomeTones.Of(agents.Outcome(e.Outcome))
	case e.Action == activity.ActionApproval:
		v.OutcomeLabel = pending.Event(e.Outcome).Words()
		v.Tone, _ = approvalEventTones.Of(pending.Event(e.Outcome))
	case e.Outcome != "":
		v.OutcomeLabel = voice.Outcome(e.Outcome).Words()
		v.Tone, _ = outcomeTones.Of(voice.Outcome(e.Outcome))
	}
	var detail map[string]any
	if json.Unmarshal(e.Detail, &detail) != nil {
		// Not an object: shown as it is.
		v.Facts = []views.Fact{{Label: text("Detail"), Value: text(string(e.Detail)), Code: true}}
		return v
	}
	if u, ok := detail["utterance"].(string); ok {
		v.Utterance = text(u)
	}
	if said, ok := detail["reply"].(string); ok {
		v.Reply = text(said)
	}
	if args, ok := detail["args"].(map[string]any); ok {
		for _, name := range slices.Sorted(maps.Keys(args)) {
			v.Args = append(v.Args, views.Fact{Label: text(name), Value: text(valueText(args[name])), Code: true})
		}
	}
	switch e.Action {
	case activity.ActionServerState:
		v.Tone = serverTone(mcp.State(fmt.Sprint(detail["to"])))
	case activity.ActionNotifyFailed:
		v.Tone = "trouble"
	}
	v.CallURL = callURL(detail)
	v.Facts = facts(detail)
	return v
}

// callURL is the page of the pending call an event is about, "" for none: the call an agent's
// call or a pending call's event names, or the link a notification carried.
func callURL(detail map[string]any) string {
	if id, ok := detail["call"].(float64); ok && id > 0 && id == float64(int64(id)) {
		return "/approvals/" + strconv.FormatInt(int64(id), 10)
	}
	link, _ := detail["link"].(string)
	u, err := url.Parse(link)
	if err != nil {
		return ""
	}
	if id, ok := strings.CutPrefix(u.Path, "/approvals/"); ok {
		if n, err := strconv.ParseInt(id, 10, 64); err == nil && n > 0 {
			return "/approvals/" + id
		}
	}
	return ""
}

// factKeys are the detail keys shown, in this order, with their labels; "from" and "to" are
// one fact. Keys not here are left out: they repeat what the entry shows (utterance, args) or
// are for machines (fingerprints, a previous declared shape, digests).
var factKeys = []struct{ key, label string }{
	{"client", "Client"},
	{"server", "Server"},
	{"kind", "Signs in with"},
	{"redirect_uri", "Answer went to"},
	{"tools", "Tools"},
	{"notifier", "Through"},
	{"target", "To"},
	{"secret", "Secret"},
	{"passkey_name", "Passkey"},
	{"via", "Added through"},
	{"expires", "Valid until"},
	{"from", "State"},
	{"error", "Error"},
	{"reason", "Why"},
	{"command", "Command line"},
	{"phrases", "Phrases"},
	{"limits", "Limits"},
	{"confirm", "Confirmed"},
	{"changed", "Changed"},
	{"destructive_raised", "Destructive"},
	{"old_name", "Renamed from"},
	{"rename_of", "Possibly a rename of"},
	{"provenance", "Provenance"},
	{"conversation", "Conversation"},
	{"user_id", "Voice user"},
}

// facts lists what an event's detail records, by factKeys.
func facts(detail map[string]any) []views.Fact {
	var out []views.Fact
	for _, k := range factKeys {
		val, ok := detail[k.key]
		if k.key == "from" {
			// A first state has no "from": the fact is the "to".
			_, ok = detail["to"]
		}
		if !ok || val == "" && k.key != "from" || val == false {
			continue
		}
		f := views.Fact{Label: text(k.label)}
		switch k.key {
		case "from":
			from, _ := val.(string)
			f.Value = text(fmt.Sprintf("%s → %s", orNone(from), valueText(detail["to"])))
		case "destructive_raised":
			f.Value = text("raised: it no longer claims to be read-only")
		case "phrases":
			f.Value, f.Code = text(lines(val)), true
			if len(f.Value) == 0 {
				f.Value, f.Code = text("none (cleared)"), false
			}
		case "limits":
			f.Value = text(limitsFact(val))
		case "command":
			f.Value, f.Code = text(valueText(val)), true
		case "notifier":
			f.Value = text(notify.Notifier(valueText(val)).Words())
		case "confirm":
			f.Value = text(allowlist.Confirm(valueText(val)).Words())
		case "expires":
			t, err := time.Parse(time.RFC3339, valueText(val))
			if err != nil {
				f.Value = text(valueText(val))
				break
			}
			f.Value = text(timeOf(t).Text)
		default:
			f.Value = text(valueText(val))
		}
		out = append(out, f)
	}
	return out
}

// valueText writes a detail's value for reading: a string as it is, a list as a comma list,
// anything else as JSON.
func valueText(v any) string {
	switch x := v.(type) {
	case string:
		return x
	case []any:
		parts := make([]string, len(x))
		for i, p := range x {
			parts[i] = valueText(p)
		}
		return strings.Join(parts, ", ")
	}
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprint(v)
	}
	return string(b)
}

// lines writes a list one item a line.
func lines(v any) string {
	list, ok := v.([]any)
	if !ok {
		return valueText(v)
	}
	parts := make([]string, len(list))
	for i, p := range list {
		parts[i] = valueText(p)
	}
	return strings.Join(parts, "\n")
}

func orNone(s string) string {
	if s == "" {
		return "none"
	}
	return s
}
