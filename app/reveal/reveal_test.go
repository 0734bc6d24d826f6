package reveal

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestHidden(t *testing.T) {
	hidden := map[string]rune{
		"zero-width space": 0x200B, "zero-width joiner": 0x200D, "word joiner": 0x2060,
		"BOM": 0xFEFF, "soft hyphen": 0x00AD, "LRE": 0x202A, "RLO": 0x202E, "LRI": 0x2066,
		"PDI": 0x2069, "LRM": 0x200E, "RLM": 0x200F, "ALM": 0x061C, "tag A": 0xE0041,
		"tag cancel": 0xE007F, "unassigned tag": 0xE0002, "NUL": 0, "ESC": 0x1b, "DEL": 0x7f,
		"CR": '\r', "C1 CSI": 0x9b, "private use": 0xE000, "NBSP": 0x00A0, "em space": 0x2003,
		"ideographic space": 0x3000, "line separator": 0x2028, "paragraph separator": 0x2029,
		"variation selector": 0xFE0F, "hangul filler": 0x3164, "braille blank": 0x2800,
		"mongolian vowel separator": 0x180E, "replacement": 0xFFFD,
	}
	for name, r := range hidden {
		if !Hidden(r) {
			t.Errorf("%s (U+%04X) should be hidden", name, r)
		}
	}
	for _, r := range "az AZ09_-.,;:!?'\"(){}[]<>\n\téüßДж中あ" {
		if Hidden(r) {
			t.Errorf("%q (U+%04X) should be visible", r, r)
		}
	}
}

func TestSplit(t *testing.T) {
	tests := []struct {
		name string
		in   string
		want []Segment
	}{
		{"empty", "", nil},
		{"plain", "list tasks", []Segment{{Text: "list tasks"}}},
		{"zero width inside", "list\u200btasks", []Segment{
			{Text: "list"}, {Text: "U+200B", Hidden: true, Why: "zero-width space"}, {Text: "tasks"}}},
		{"bidi override at start", "\u202Etxt.exe", []Segment{
			{Text: "U+202E", Hidden: true, Why: "bidi control"}, {Text: "txt.exe"}}},
		{"tag at end", "ok\U000E0041", []Segment{
			{Text: "ok"}, {Text: "U+E0041", Hidden: true, Why: "tag character"}}},
		{"invalid byte", "a\xffb", []Segment{
			{Text: "a"}, {Text: "invalid byte 0xff", Hidden: true, Why: "not valid UTF-8"}, {Text: "b"}}},
		{"two in a row", "\u200b\u200c", []Segment{
			{Text: "U+200B", Hidden: true, Why: "zero-width space"},
			{Text: "U+200C", Hidden: true, Why: "zero-width non-joiner"}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if diff := cmp.Diff(tt.want, Split(tt.in)); diff != "" {
				t.Fatalf("Split(%q) (-want +got):\n%s", tt.in, diff)
			}
		})
	}
}

func TestInJSON(t *testing.T) {
	tests := []struct {
		doc  string
		want bool
	}{
		{`{"type":"object","properties":{"q":{"type":"string"}}}`, false},
		{`{"description":"raw` + "\u200b" + `"}`, true},
		{`{"description":"escaped \u200b"}`, true},
		{`{"pro\u202eperties":{}}`, true},
		{`{"enum":["a","b\u2066"]}`, true},
		{`not json`, false},
	}
	for _, tt := range tests {
		if got := InJSON([]byte(tt.doc)); got != tt.want {
			t.Errorf("InJSON(%s) = %v, want %v", tt.doc, got, tt.want)
		}
	}
}

func TestMixedScripts(t *testing.T) {
	tests := map[string]bool{
		"list_tasks": false, "liѕt_tasks": true /* Cyrillic dze */, "задачи": false,
		"αβγ_abc": true, "日本語のテスト": false, "tool_42": false, "": false,
	}
	for in, want := range tests {
		if got := MixedScripts(in); got != want {
			t.Errorf("MixedScripts(%q) = %v, want %v", in, got, want)
		}
	}
}
