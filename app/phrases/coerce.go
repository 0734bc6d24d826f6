package phrases

import (
	"fmt"
	"math"
	"strconv"
	"strings"
)

// CoerceError means a spoken value does not fit its property; Want says what would.
type CoerceError struct {
	Property string
	Want     string // "a number", "a whole number", "yes or no", "one of low, normal or high"
}

func (e *CoerceError) Error() string {
	return fmt.Sprintf("%s must be %s", e.Property, e.Want)
}

// Coerce turns the words said for a property into a value of its type: digits or spoken
// numbers ("twenty three", "three point five", "minus four") for integers and numbers;
// yes/no, on/off and true/false for booleans; an enum value matched regardless of case and
// punctuation; for a string, the words as said. Anything else is a *CoerceError.
func Coerce(p Property, said string) (any, error) {
	said = strings.TrimSpace(strings.TrimRight(strings.TrimSpace(said), ".!?,;:"))
	if len(p.Enum) > 0 {
		return coerceEnum(p, said)
	}
	switch p.Type {
	case "string":
		if said == "" {
			return nil, &CoerceError{p.Name, "some words"}
		}
		return said, nil
	case "integer":
		if f, ok := parseNumber(said); ok && f == math.Trunc(f) && math.Abs(f) < 1<<53 {
			return int64(f), nil
		}
		return nil, &CoerceError{p.Name, "a whole number"}
	case "number":
		if f, ok := parseNumber(said); ok {
			return f, nil
		}
		return nil, &CoerceError{p.Name, "a number"}
	case "boolean":
		switch Join(Words(said)) {
		case "yes", "true", "on":
			return true, nil
		case "no", "false", "off":
			return false, nil
		}
		return nil, &CoerceError{p.Name, "yes or no"}
	}
	return nil, fmt.Errorf("%w: %s", ErrUnfillable, p.Name)
}

// coerceEnum matches said against the enum's values: strings by their spoken words, other
// values after coercing said to their type.
func coerceEnum(p Property, said string) (any, error) {
	heard := Join(Words(said))
	for _, v := range p.Enum {
		switch v := v.(type) {
		case string:
			if strings.EqualFold(v, said) || (heard != "" && Join(Words(v)) == heard) {
				return v, nil
			}
		case float64:
			if f, ok := parseNumber(said); ok && f == v {
				if p.Type == "integer" {
					return int64(f), nil
				}
				return f, nil
			}
		case bool:
			if b, err := Coerce(Property{Name: p.Name, Type: "boolean"}, said); err == nil && b == v {
				return v, nil
			}
		}
	}
	names := make([]string, 0, len(p.Enum))
	for _, v := range p.Enum {
		names = append(names, fmt.Sprint(v))
	}
	return nil, &CoerceError{p.Name, "one of " + orList(names)}
}

// parseNumber reads a plain decimal ("3.5", "-4", "1,000") or a spoken number.
func parseNumber(said string) (float64, bool) {
	if f, ok := Decimal(strings.ReplaceAll(said, ",", "")); ok && thousands(said) {
		return f, true
	}
	words := Words(said)
	if len(words) == 0 {
		return 0, false
	}
	texts := make([]string, len(words))
	for i, w := range words {
		texts[i] = w.Text
	}
	sign := 1.0
	if strings.HasPrefix(said, "-") {
		sign = -1
	}
	if texts[0] == "minus" || texts[0] == "negative" {
		sign, texts = -1, texts[1:]
	}
	f, ok := spokenNumber(texts)
	return sign * f, ok
}

// thousands reports whether the commas of a number, if any, separate groups of three digits.
func thousands(s string) bool {
	if !strings.Contains(s, ",") {
		return true
	}
	intPart, _, _ := strings.Cut(strings.TrimLeft(s, "+-"), ".")
	groups := strings.Split(intPart, ",")
	if len(groups[0]) == 0 || len(groups[0]) > 3 {
		return false
	}
	for _, g := range groups[1:] {
		if len(g) != 3 {
			return false
		}
	}
	return true
}

// Decimal parses a plain decimal number: strconv.ParseFloat alone would also take "Inf",
// "NaN", hex floats and digit separators, none of which a person says as a number.
func Decimal(s string) (float64, bool) {
	i := 0
	if i < len(s) && (s[i] == '+' || s[i] == '-') {
		i++
	}
	digits := 0
	for ; i < len(s) && '0' <= s[i] && s[i] <= '9'; i++ {
		digits++
	}
	if i < len(s) && s[i] == '.' {
		for i++; i < len(s) && '0' <= s[i] && s[i] <= '9'; i++ {
			digits++
		}
	}
	if digits == 0 {
		return 0, false
	}
	if i < len(s) && (s[i] == 'e' || s[i] == 'E') {
		i++
		if i < len(s) && (s[i] == '+' || s[i] == '-') {
			i++
		}
		exp := 0
		for ; i < len(s) && '0' <= s[i] && s[i] <= '9'; i++ {
			exp++
		}
		if exp == 0 {
			return 0, false
		}
	}
	if i != len(s) {
		return 0, false
	}
	f, err := strconv.ParseFloat(s, 64)
	if err != nil || math.IsInf(f, 0) || math.IsNaN(f) {
		return 0, false
	}
	return f, true
}

var (
	units = map[string]int64{"zero": 0, "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6,
		"seven": 7, "eight": 8, "nine": 9}
	teens = map[string]int64{"ten": 10, "eleven": 11, "twelve": 12, "thirteen": 13, "fourteen": 14,
		"fifteen": 15, "sixteen": 16, "seventeen": 17, "eighteen": 18, "nineteen": 19}
	tens = map[string]int64{"twenty": 20, "thirty": 30, "forty": 40, "fifty": 50, "sixty": 60,
		"seventy": 70, "eighty": 80, "ninety": 90}
	scales = map[string]int64{"thousand": 1e3, "million": 1e6, "billion": 1e9}
)

// spokenNumber reads "twenty three", "one hundred and five", "a thousand", "three point one
// four", or digits with a spoken fraction ("3 point 5").
func spokenNumber(words []string) (float64, bool) {
	intWords, fracWords := words, []string(nil)
	for i, w := range words {
		if w == "point" {
			intWords, fracWords = words[:i], words[i+1:]
			if len(fracWords) == 0 {
				return 0, false
			}
			break
		}
	}
	var whole int64
	switch {
	case len(intWords) == 0 && fracWords != nil:
		whole = 0 // "point five"
	case len(intWords) == 1 && isDigits(intWords[0]):
		n, err := strconv.ParseInt(intWords[0], 10, 64)
		if err != nil {
			return 0, false
		}
		whole = n
	default:
		n, ok := spokenInteger(intWords)
		if !ok {
			return 0, false
		}
		whole = n
	}
	var frac strings.Builder
	for _, w := range fracWords {
		switch {
		case isDigits(w):
			frac.WriteString(w)
		case w == "oh":
			frac.WriteByte('0')
		default:
			d, ok := units[w]
			if !ok {
				return 0, false
			}
			frac.WriteByte(byte('0' + d))
		}
	}
	if frac.Len() == 0 {
		return float64(whole), true
	}
	f, err := strconv.ParseFloat(strconv.FormatInt(whole, 10)+"."+frac.String(), 64)
	return f, err == nil
}

// spokenInteger reads a whole number said in words. It refuses sequences no one says for one
// number ("five five", "twenty twelve"), which are more likely two numbers or a mishearing.
func spokenInteger(words []string) (int64, bool) {
	const (
		start = iota
		afterUnit
		afterTens
		afterHundred
		afterScale
	)
	var total, group int64
	state, said := start, false
	for i, w := range words {
		switch {
		case w == "and" && (state == afterHundred || state == afterScale):
		case w == "a" && i+1 < len(words) && (words[i+1] == "hundred" || scales[words[i+1]] > 0) && state == start:
			group, state = 1, afterUnit
		case units[w] > 0 || (w == "zero" && len(words) == 1):
			if state == afterUnit {
				return 0, false
			}
			group += units[w]
			state, said = afterUnit, true
		case teens[w] > 0 || tens[w] > 0:
			if state == afterUnit || state == afterTens {
				return 0, false
			}
			group += teens[w] + tens[w]
			state, said = afterUnit, true
			if tens[w] > 0 {
				state = afterTens
			}
		case w == "hundred":
			if group == 0 || group >= 100 {
				return 0, false
			}
			group *= 100
			state, said = afterHundred, true
		case scales[w] > 0:
			if group == 0 {
				return 0, false
			}
			total += group * scales[w]
			group, state, said = 0, afterScale, true
		default:
			return 0, false
		}
	}
	return total + group, said
}

func isDigits(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}

// orList joins items as "a, b or c"; andList as "a, b and c".
func orList(items []string) string  { return JoinList(items, "or") }
func andList(items []string) string { return JoinList(items, "and") }

// JoinList joins items as a sentence does: "a, b and c" with last "and".
func JoinList(items []string, last string) string {
	switch len(items) {
	case 0:
		return ""
	case 1:
		return items[0]
	}
	return strings.Join(items[:len(items)-1], ", ") + " " + last + " " + items[len(items)-1]
}
