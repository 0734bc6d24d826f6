package voice

import (
	"bytes"
	"encoding/json"
	"fmt"
	"sort"
	"strings"
	"unicode"

	"maven/app/allowlist"
	"maven/app/phrases"
)

// A tool's result is often JSON (as text, or structured content that mcp.FlattenResult wrote
// as JSON): read out, that is a stream of braces and quotes. A reply speaks a sentence about it
// instead: how many items, the first few names, or an object's plain fields. The whole result
// stays in Reply.Output.

// namedItems is how many names a summary reads before "and N more".
const namedItems = 3

// summarize returns a sentence about a JSON result, or ok false when out is not JSON.
func summarize(out string) (string, bool) {
	trimmed := strings.TrimSpace(out)
	if trimmed == "" || (trimmed[0] != '{' && trimmed[0] != '[') {
		return "", false
	}
	dec := json.NewDecoder(strings.NewReader(trimmed))
	dec.UseNumber()
	var v any
	if dec.Decode(&v) != nil || dec.More() {
		return "", false
	}
	switch v := v.(type) {
	case []any:
		return capitalize(listSentence(v, "item", "items")), true
	case map[string]any:
		return capitalize(objectSentence(v)), true
	}
	return "", false
}

// listSentence says how many items a list holds and names the first few.
func listSentence(items []any, one, many string) string {
	switch len(items) {
	case 0:
		return "no " + many + "."
	case 1:
		if name := itemName(items[0]); name != "" {
			return fmt.Sprintf("1 %s: %s.", one, name)
		}
		return fmt.Sprintf("1 %s.", one)
	}
	var names []string
	for _, it := range items {
		if name := itemName(it); name != "" {
			names = append(names, name)
		}
		if len(names) == namedItems {
			break
		}
	}
	head := fmt.Sprintf("%d %s", len(items), many)
	if len(names) == 0 {
		return head + "."
	}
	if rest := len(items) - len(names); rest > 0 {
		return fmt.Sprintf("%s: %s and %d more.", head, strings.Join(names, ", "), rest)
	}
	return fmt.Sprintf("%s: %s.", head, phrases.JoinList(names, "and"))
}

// nameKeys are the fields that name an item, in order of preference.
var nameKeys = []string{"name", "title", "label", "summary", "text", "description", "id", "key"}

// itemName is what a list item is called: itself when it is a plain value, its name-like field
// when it is an object.
func itemName(v any) string {
	switch v := v.(type) {
	case string:
		return v
	case json.Number, bool:
		return fmt.Sprint(v)
	case map[string]any:
		for _, k := range nameKeys {
			for key, val := range v {
				if strings.EqualFold(key, k) {
					if s := scalarText(val); s != "" {
						return s
					}
				}
			}
		}
	}
	return ""
}

// objectSentence reads a single list field as a list ({"tasks": [...]} → "3 tasks: …") and
// otherwise the object's plain fields ("temperature 22.5, conditions cloudy").
func objectSentence(obj map[string]any) string {
	keys := make([]string, 0, len(obj))
	for k := range obj {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var lists []string
	for _, k := range keys {
		if _, ok := obj[k].([]any); ok {
			lists = append(lists, k)
		}
	}
	if len(lists) == 1 && len(obj) <= 3 {
		name := spokenWords(lists[0])
		return listSentence(obj[lists[0]].([]any), singular(name), name)
	}
	var parts []string
	for _, k := range keys {
		switch v := obj[k].(type) {
		case []any:
			parts = append(parts, fmt.Sprintf("%s: %d", spokenWords(k), len(v)))
		case map[string]any:
			parts = append(parts, fmt.Sprintf("%s: %d fields", spokenWords(k), len(v)))
		default:
			if s := scalarText(v); s != "" {
				parts = append(parts, spokenWords(k)+" "+s)
			}
		}
	}
	switch {
	case len(parts) == 0:
		return "an empty result."
	case len(parts) > 5:
		return fmt.Sprintf("%s, and %d more fields.", strings.Join(parts[:5], ", "), len(parts)-5)
	}
	return strings.Join(parts, ", ") + "."
}

func scalarText(v any) string {
	switch v := v.(type) {
	case string:
		return v
	case json.Number:
		return v.String()
	case bool:
		if v {
			return "yes"
		}
		return "no"
	}
	return ""
}

// singular guesses the singular of an English plural key, only where that is safe.
func singular(s string) string {
	if strings.HasSuffix(s, "s") && !strings.HasSuffix(s, "ss") && len(s) > 3 {
		return strings.TrimSuffix(s, "s")
	}
	return s
}

// spokenWords reads an identifier as words: "due_date" → "due date".
func spokenWords(s string) string { return strings.Join(allowlist.SpokenWords(s), " ") }

// speakable flattens text into one line of at most max characters, cut at a word.
func speakable(s string, max int) string {
	s = strings.Map(func(r rune) rune {
		if unicode.IsControl(r) || unicode.Is(unicode.Cf, r) {
			return ' '
		}
		return r
	}, s)
	s = strings.Join(strings.Fields(s), " ")
	r := []rune(s)
	if len(r) <= max {
		return s
	}
	cut := string(r[:max])
	if i := strings.LastIndexByte(cut, ' '); i > max/2 {
		cut = cut[:i]
	}
	return strings.TrimRight(cut, " ,;:") + "…"
}

// spokenValue reads an argument's value back: text as it is, numbers plainly, booleans as yes
// and no, anything else as compact JSON.
func spokenValue(v any) string {
	switch v := v.(type) {
	case string:
		return v
	case bool:
		if v {
			return "yes"
		}
		return "no"
	case float64, int64, int, json.Number:
		return fmt.Sprint(v)
	}
	var b bytes.Buffer
	if json.NewEncoder(&b).Encode(v) != nil {
		return fmt.Sprint(v)
	}
	return strings.TrimSpace(b.String())
}

func capitalize(s string) string {
	if s == "" {
		return s
	}
	r := []rune(s)
	r[0] = unicode.ToUpper(r[0])
	return string(r)
}
