package config

import (
	"encoding/json"
	"fmt"
	"maps"
	"math"
	"slices"
	"strings"
	"unicode"
)

// Voice tunes how utterances are heard (the "voice" block).
type Voice struct {
	// WakeWords are dropped from the start of an utterance ("hey maven"); nil means the voice
	// service's default, an empty list none.
	WakeWords []string
	// TurnsPerSecond and Burst bound the webhook's turns; 0 means the voice service's default.
	// A benchmark raises them to measure turns back to back.
	TurnsPerSecond float64
	Burst          int
}

var voiceKeys = []string{"wake_words", "turns_per_second", "burst"}

// Limits of the voice block.
const (
	maxWakeWords      = 10
	maxTurnsPerSecond = 1e6
)

func (d *decoder) voice(raw []byte, path string) Voice {
	obj, ok := d.object(raw, path)
	if !ok {
		return Voice{}
	}
	var v Voice
	for _, key := range slices.Sorted(maps.Keys(obj)) {
		p, raw := keyPath(path, key), obj[key]
		switch key {
		case "wake_words":
			v.WakeWords = d.wakeWords(raw, p)
		case "turns_per_second":
			if kind(raw) != '0' || json.Unmarshal(raw, &v.TurnsPerSecond) != nil || !(v.TurnsPerSecond > 0 && v.TurnsPerSecond <= maxTurnsPerSecond) {
				d.fail(expected(p, fmt.Sprintf("a number above 0 and at most %g", maxTurnsPerSecond), raw))
			}
		case "burst":
			var f float64
			if kind(raw) != '0' || json.Unmarshal(raw, &f) != nil || f != math.Trunc(f) || f < 1 || f > maxTurnsPerSecond {
				d.fail(expected(p, fmt.Sprintf("a whole number from 1 to %g", maxTurnsPerSecond), raw))
				continue
			}
			v.Burst = int(f)
		default:
			d.unknown(path, key, voiceKeys)
		}
	}
	return v
}

func (d *decoder) wakeWords(raw []byte, path string) []string {
	before := d.mark()
	words := d.strs(raw, path, `a list of phrases such as ["hey maven"]`)
	if d.failed(before) {
		return words
	}
	if len(words) > maxWakeWords {
		d.failf(path, fmt.Sprintf("at most %d wake words", maxWakeWords))
	}
	for i, w := range words {
		if len(w) > MaxNameLen || !strings.ContainsFunc(w, func(r rune) bool { return unicode.IsLetter(r) || unicode.IsDigit(r) }) {
			d.failf(indexPath(path, i), fmt.Sprintf("expected words of at most %d characters, got %s", MaxNameLen, quoteValue(w)))
		}
	}
	return words
}
