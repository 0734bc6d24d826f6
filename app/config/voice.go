package config

import (
	"encoding/json"
	"fmt"
	"math"
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

func decodeVoice(raw []byte, path string) (Voice, error) {
	obj, err := decodeObject(raw, path, voiceKeys)
	if err != nil {
		return Voice{}, err
	}
	var v Voice
	if raw, ok := obj.members["wake_words"]; ok {
		p := keyPath(path, "wake_words")
		if v.WakeWords, err = decodeStrings(raw, p, `a list of phrases such as ["hey maven"]`); err != nil {
			return Voice{}, err
		}
		if len(v.WakeWords) > maxWakeWords {
			return Voice{}, errorf(p, fmt.Sprintf("at most %d wake words", maxWakeWords))
		}
		for i, w := range v.WakeWords {
			if len(w) > MaxNameLen || !strings.ContainsFunc(w, func(r rune) bool { return unicode.IsLetter(r) || unicode.IsDigit(r) }) {
				return Voice{}, errorf(indexPath(p, i), fmt.Sprintf("expected words of at most %d characters, got %s", MaxNameLen, quoteValue(w)))
			}
		}
	}
	if raw, ok := obj.members["turns_per_second"]; ok {
		p := keyPath(path, "turns_per_second")
		if kind(raw) != '0' || json.Unmarshal(raw, &v.TurnsPerSecond) != nil || !(v.TurnsPerSecond > 0 && v.TurnsPerSecond <= maxTurnsPerSecond) {
			return Voice{}, expected(p, fmt.Sprintf("a number above 0 and at most %g", maxTurnsPerSecond), raw)
		}
	}
	if raw, ok := obj.members["burst"]; ok {
		p := keyPath(path, "burst")
		var f float64
		if kind(raw) != '0' || json.Unmarshal(raw, &f) != nil || f != math.Trunc(f) || f < 1 || f > maxTurnsPerSecond {
			return Voice{}, expected(p, fmt.Sprintf("a whole number from 1 to %g", maxTurnsPerSecond), raw)
		}
		v.Burst = int(f)
	}
	return v, nil
}
