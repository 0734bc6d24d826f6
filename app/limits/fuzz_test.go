package limits_test

import (
	"encoding/json"
	"math"
	"strings"
	"testing"

	"github.com/google/jsonschema-go/jsonschema"

	"maven/app/limits"
)

// fuzzSchema is the tool whose limits and calls FuzzCheckAgreesWithJSONSchema makes up.
const fuzzSchema = `{"type":"object","properties":{
	"temperature":{"type":"number","minimum":5,"maximum":35},
	"count":{"type":"integer"},
	"mode":{"type":"string","enum":["heat","cool","off","auto"]},
	"name":{"type":"string","maxLength":50},
	"code":{"type":"string"},
	"unit":{"type":"string"},
	"flag":{"type":"boolean"}
},"required":["temperature"],"additionalProperties":false}`

func resolve(t testing.TB, raw json.RawMessage) *jsonschema.Resolved {
	t.Helper()
	var s jsonschema.Schema
	if err := json.Unmarshal(raw, &s); err != nil {
		t.Fatal(err)
	}
	r, err := s.Resolve(nil)
	if err != nil {
		t.Fatalf("resolve %s: %v", raw, err)
	}
	return r
}

// FuzzCheckAgreesWithJSONSchema: for limits made up from the input (whichever of a range, a
// set of values, a length, a pattern and fixed values it picks, when Validate takes them) and a
// call made up from it too (values of every type, properties left out), the approved schema and
// Check together accept exactly what google/jsonschema-go's validation of the narrowed schema
// accepts: what agents are shown is what is enforced.
func FuzzCheckAgreesWithJSONSchema(f *testing.F) {
	f.Add(uint16(0xffff), 17.0, 23.0, uint8(1), uint8(20), "^[A-Z]{3}$", "celsius", uint8(0b0101),
		20.0, 3.0, "heat", "hall", "ABC", "celsius", true, uint8(0), uint16(0), uint8(0))
	f.Add(uint16(0x0001), 17.0, 23.0, uint8(0), uint8(0), "", "", uint8(0), 25.0, 0.0, "heat", "", "", "", false, uint8(0), uint16(0), uint8(2))
	f.Add(uint16(0x0010), 0.0, 0.0, uint8(0), uint8(0), "(a+)+$", "", uint8(0), 5.0, 0.0, "", "", "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaab", "", false, uint8(0), uint16(0), uint8(0))
	f.Add(uint16(0x00ff), 5.0, 35.0, uint8(3), uint8(3), "é", "x", uint8(0b1010), 5.0, 2.0, "off", "héé", "é", "x", false, uint8(0b1111), uint16(0x0a5a), uint8(13))
	approvedSchema := resolve(f, json.RawMessage(fuzzSchema))
	s, err := limits.ReadSchema(json.RawMessage(fuzzSchema))
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, pick uint16, lo, hi float64, n1, n2 uint8, pattern, fixed string, modes uint8,
		temp, count float64, mode, name, code, unit string, flag bool, omit uint8, swap uint16, edge uint8) {
		set := limits.Set{Props: map[string]limits.Limit{}}
		if pick&1 != 0 {
			set.Props["temperature"] = limits.Limit{Kind: limits.KindRange, Min: &lo, Max: &hi}
		}
		if pick&2 != 0 {
			set.Props["count"] = limits.Limit{Kind: limits.KindValues, Values: []any{float64(n1), float64(n2) + 1000}}
		}
		if pick&4 != 0 {
			var vs []any
			for i, m := range []string{"heat", "cool", "off", "auto"} {
				if modes&(1<<i) != 0 {
					vs = append(vs, m)
				}
			}
			set.Props["mode"] = limits.Limit{Kind: limits.KindValues, Values: vs}
		}
		if pick&8 != 0 {
			a, b := float64(n1), float64(n2)
			set.Props["name"] = limits.Limit{Kind: limits.KindLength, Min: &a, Max: &b}
		}
		if pick&16 != 0 {
			set.Props["code"] = limits.Limit{Kind: limits.KindPattern, Pattern: pattern}
		}
		if pick&32 != 0 {
			set.Props["unit"] = limits.Limit{Kind: limits.KindFixed, Value: fixed}
		}
		if pick&64 != 0 {
			set.Props["flag"] = limits.Limit{Kind: limits.KindFixed, Value: pick&128 != 0}
		}
		if limits.Validate(s, set) != nil {
			return
		}
		checker, err := limits.Compile(set)
		if err != nil {
			t.Fatalf("a set Validate takes does not compile: %v", err)
		}
		narrowed, err := limits.Narrow(json.RawMessage(fuzzSchema), set)
		if err != nil {
			t.Fatalf("a set Validate takes does not narrow the schema: %v", err)
		}
		// Values at the limits' edges, which random numbers and strings would seldom hit.
		switch edge % 5 {
		case 1:
			temp = lo
		case 2:
			temp = hi
		case 3:
			temp = math.Nextafter(hi, math.Inf(1))
		case 4:
			temp = math.Nextafter(lo, math.Inf(-1))
		}
		switch edge / 5 % 5 {
		case 1:
			name = strings.Repeat("é", int(n1))
		case 2:
			name = strings.Repeat("é", int(n2))
		case 3:
			name = strings.Repeat("a", int(n2)+1)
		case 4:
			count, unit = float64(n2)+1000, fixed
		}
		args := fuzzArgs(temp, count, mode, name, code, unit, flag, omit, swap)
		if args == nil {
			return
		}
		approved := approvedSchema.Validate(args)
		checked := checker.Check(args)
		shown := resolve(t, narrowed).Validate(args)
		if (approved == nil && checked == nil) != (shown == nil) {
			t.Fatalf("limits %s, call %v:\napproved schema: %v\nCheck: %v\nnarrowed schema %s: %v",
				mustCanonical(t, set), args, approved, checked, narrowed, shown)
		}
	})
}

// fuzzArgs is a call's arguments: each property's value, left out where omit's bit is set, of
// another type where swap's two bits for it say so; nil when a number is not finite (JSON has
// none of those).
func fuzzArgs(temp, count float64, mode, name, code, unit string, flag bool, omit uint8, swap uint16) map[string]any {
	if math.IsNaN(temp) || math.IsInf(temp, 0) || math.IsNaN(count) || math.IsInf(count, 0) {
		return nil
	}
	values := []struct {
		key string
		v   any
	}{
		{"temperature", temp}, {"count", count}, {"mode", mode}, {"name", name},
		{"code", code}, {"unit", unit}, {"flag", flag},
	}
	others := []any{temp, code, flag, nil, []any{mode}}
	args := map[string]any{}
	for i, kv := range values {
		if omit&(1<<i) != 0 {
			continue
		}
		v := kv.v
		if s := (swap >> (2 * i)) & 3; s != 0 {
			v = others[(int(s)+i)%len(others)]
		}
		args[kv.key] = v
	}
	return args
}
