package config

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestParseVoice(t *testing.T) {
	for _, c := range []struct {
		doc  string
		want Voice
	}{
		{`{}`, Voice{}},
		{`{"voice": {}}`, Voice{}},
		{`{"voice": {"wake_words": []}}`, Voice{WakeWords: []string{}}},
		{`{"voice": {"wake_words": ["hey maven", "computer"], "turns_per_second": 2.5, "burst": 10}}`,
			Voice{WakeWords: []string{"hey maven", "computer"}, TurnsPerSecond: 2.5, Burst: 10}},
	} {
		cfg, err := Parse([]byte(c.doc))
		if err != nil {
			t.Fatalf("%s: %v", c.doc, err)
		}
		if diff := cmp.Diff(c.want, cfg.Voice); diff != "" {
			t.Errorf("%s: (-want +got)\n%s", c.doc, diff)
		}
	}
}

func TestParseVoiceErrors(t *testing.T) {
	for _, c := range []struct{ doc, want string }{
		{`{"voice": []}`, "voice: expected an object"},
		{`{"voice": {"wakewords": ["x"]}}`, `unknown key "voice.wakewords"`},
		{`{"voice": {"wake_words": "hey maven"}}`, "voice.wake_words: expected a list of phrases"},
		{`{"voice": {"wake_words": ["..."]}}`, "voice.wake_words[0]: expected words"},
		{`{"voice": {"wake_words": ["a","b","c","d","e","f","g","h","i","j","k"]}}`, "at most 10 wake words"},
		{`{"voice": {"turns_per_second": 0}}`, "voice.turns_per_second: expected a number above 0"},
		{`{"voice": {"turns_per_second": "5"}}`, "voice.turns_per_second: expected a number above 0"},
		{`{"voice": {"burst": 2.5}}`, "voice.burst: expected a whole number from 1"},
		{`{"voice": {"burst": 0}}`, "voice.burst: expected a whole number from 1"},
	} {
		_, err := Parse([]byte(c.doc))
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: got %v, want %q", c.doc, err, c.want)
		}
	}
}
