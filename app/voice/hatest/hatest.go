// Package hatest builds webhook request bodies exactly as Home Assistant's webhook-conversation
// integration (HACS, EuleMitKeule/webhook-conversation) builds them, for tests of POST /voice.
//
// What the integration does, from its source (entity.py _build_payload, conversation.py
// _async_handle_chat_log and _get_exposed_entities): the payload is a dict with, in this order,
// "messages" (the whole chat log, each {"role", "content"}: the system prompt first, then user,
// assistant and tool_result turns; an assistant turn that only called tools has content null),
// "conversation_id", "extra_system_prompt" (often null), "stream", then "user_id" (null for a
// voice satellite), "query" (the last user message) and "exposed_entities": a string, Python's
// json.dumps of a list of {"entity_id", "name", "state", "aliases", "area_id", "area_name"}
// (", " and ": " separators, non-ASCII escaped). aiohttp posts the dict with Home Assistant's
// JSON encoder (orjson: compact, UTF-8 as is).
package hatest

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"unicode/utf16"
)

// Entity is one entity exposed to Assist.
type Entity struct {
	ID, Name, State string
	Aliases         []string
	AreaID, Area    string // "" is null: an entity without an area
}

// Message is one entry of the chat log; a nil Content is null.
type Message struct {
	Role    string
	Content *string
}

// Text returns a message with content.
func Text(role, content string) Message { return Message{Role: role, Content: &content} }

// Chat is one conversation turn as the integration posts it.
type Chat struct {
	ConversationID string
	Log            []Message // the chat log, system prompt first, ending with the user's turn
	ExtraPrompt    *string
	Stream         bool
	UserID         *string
	Entities       []Entity
}

// SystemPrompt is a system prompt of the size Home Assistant's default one has.
const SystemPrompt = "You are a voice assistant for Home Assistant.\nAnswer questions about the world truthfully.\n" +
	"Answer in plain text. Keep it simple and to the point.\nWhen controlling Home Assistant always call the intent tools. " +
	"Use HassTurnOn to lock and HassTurnOff to unlock a lock. When controlling a device, prefer passing just name and domain. " +
	"When controlling an area, prefer passing just area name and domain.\nWhen a user asks to turn on all devices of a specific type, " +
	"ask user to specify an area, unless there is only one device of that type.\nThis device is not able to start timers.\n" +
	"You ARE equipped to answer questions about the current state of\nthe home using the `GetLiveContext` tool. This is a primary function. " +
	"Do not state you lack the\nfunctionality if the question requires live data.\nCurrent time is 18:32:07. Today's date is 2026-12-13."

// ContentType is the Content-Type the integration posts with: entity.py's _get_auth_headers
// sets it for every request, and earlier versions posted with aiohttp's json=, which sets the
// same. It never posts without one.
const ContentType = "application/json"

// Body returns the request body the integration posts for c.
func Body(c Chat) []byte {
	var query string
	for _, m := range c.Log {
		if m.Role == "user" && m.Content != nil {
			query = *m.Content
		}
	}
	var b bytes.Buffer
	b.WriteString(`{"messages":[`)
	for i, m := range c.Log {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(`{"role":` + orjson(m.Role) + `,"content":` + orjsonPtr(m.Content) + `}`)
	}
	b.WriteString(`],"conversation_id":` + orjson(c.ConversationID))
	b.WriteString(`,"extra_system_prompt":` + orjsonPtr(c.ExtraPrompt))
	fmt.Fprintf(&b, `,"stream":%t`, c.Stream)
	b.WriteString(`,"user_id":` + orjsonPtr(c.UserID))
	b.WriteString(`,"query":` + orjson(query))
	b.WriteString(`,"exposed_entities":` + orjson(Entities(c.Entities)) + `}`)
	return b.Bytes()
}

// Entities is Python's json.dumps of the exposed entities, as the integration sends them.
func Entities(es []Entity) string {
	parts := make([]string, len(es))
	for i, e := range es {
		aliases := make([]string, len(e.Aliases))
		for j, a := range e.Aliases {
			aliases[j] = pyString(a)
		}
		parts[i] = fmt.Sprintf(`{"entity_id": %s, "name": %s, "state": %s, "aliases": [%s], "area_id": %s, "area_name": %s}`,
			pyString(e.ID), pyString(e.Name), pyString(e.State), strings.Join(aliases, ", "), pyOptional(e.AreaID), pyOptional(e.Area))
	}
	return "[" + strings.Join(parts, ", ") + "]"
}

// Home returns n exposed entities spread over areas, some with aliases, some without an area,
// some named with letters outside ASCII: a home of that size.
func Home(n int) []Entity {
	areas := []struct{ id, name string }{{"living_room", "Living Room"}, {"kitchen", "Küche"}, {"bedroom", "Bedroom"},
		{"garage", "Garage"}, {"garden", "Garten & Terrasse"}, {"", ""}}
	domains := []struct{ domain, thing, state string }{{"light", "Light", "off"}, {"switch", "Plug", "on"},
		{"sensor", "Temperature", "21.5"}, {"binary_sensor", "Window", "off"}, {"climate", "Thermostat", "heat"},
		{"media_player", "Speaker", "idle"}, {"cover", "Blinds", "open"}}
	out := make([]Entity, n)
	for i := range out {
		a, d := areas[i%len(areas)], domains[i%len(domains)]
		name := strings.TrimSpace(fmt.Sprintf("%s %s %d", a.name, d.thing, i))
		e := Entity{ID: fmt.Sprintf("%s.%s_%d", d.domain, strings.ToLower(strings.ReplaceAll(d.thing, " ", "_")), i),
			Name: name, State: d.state, AreaID: a.id, Area: a.name}
		if i%3 == 0 {
			e.Aliases = []string{fmt.Sprintf("%s %d", strings.ToLower(d.thing), i), "the “main” one"}
		}
		out[i] = e
	}
	return out
}

// orjson encodes a string as Home Assistant's encoder does: UTF-8 as is, HTML characters not
// escaped.
func orjson(s string) string {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(s)
	return strings.TrimSuffix(b.String(), "\n")
}

func orjsonPtr(s *string) string {
	if s == nil {
		return "null"
	}
	return orjson(*s)
}

// pyString encodes a string as Python's json.dumps does by default (ensure_ascii).
func pyString(s string) string {
	var b strings.Builder
	b.WriteByte('"')
	for _, r := range s {
		switch {
		case r == '"':
			b.WriteString(`\"`)
		case r == '\\':
			b.WriteString(`\\`)
		case r == '\n':
			b.WriteString(`\n`)
		case r == '\r':
			b.WriteString(`\r`)
		case r == '\t':
			b.WriteString(`\t`)
		case r < 0x20 || (r >= 0x7f && r <= 0xffff):
			fmt.Fprintf(&b, `\u%04x`, r)
		case r > 0xffff:
			hi, lo := utf16.EncodeRune(r)
			fmt.Fprintf(&b, `\u%04x\u%04x`, hi, lo)
		default:
			b.WriteRune(r)
		}
	}
	b.WriteByte('"')
	return b.String()
}

func pyOptional(s string) string {
	if s == "" {
		return "null"
	}
	return pyString(s)
}
