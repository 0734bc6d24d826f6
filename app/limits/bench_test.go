package limits_test

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"testing"

	"maven/app/limits"
)

// tenSchema is a tool of ten properties, every one limited by tenLimits; tenArgs are within.
const (
	tenSchema = `{"type":"object","properties":{
		"temperature":{"type":"number"},"target":{"type":"number"},"count":{"type":"integer"},
		"mode":{"type":"string","enum":["heat","cool","off","auto"]},"fan":{"type":"string"},
		"unit":{"type":"string"},"name":{"type":"string"},"room":{"type":"string"},
		"code":{"type":"string"},"eco":{"type":"boolean"}},
		"required":["temperature"],"additionalProperties":false}`
	tenLimits = `{"properties":{
		"temperature":{"minimum":17,"maximum":23},"target":{"maximum":30},"count":{"enum":[1,2,3]},
		"mode":{"enum":["heat","cool"]},"fan":{"enum":["low","medium","high"]},"unit":{"const":"celsius"},
		"name":{"minLength":1,"maxLength":40},"room":{"pattern":"^[a-z ]+$"},"code":{"pattern":"^[A-Z]{3}-[0-9]{4}$"},
		"eco":{"const":true}}}`
)

var tenArgs = map[string]any{"temperature": 20.5, "target": 21.0, "count": 2.0, "mode": "heat", "fan": "high",
	"unit": "celsius", "name": "Living room thermostat", "room": "living room", "code": "ABC-1234", "eco": true}

// BenchmarkCheck10Properties: checking a call of ten arguments against ten limits (the target
// is at most 20 µs a call).
func BenchmarkCheck10Properties(b *testing.B) {
	c, err := limits.Compile(set(b, tenLimits))
	if err != nil {
		b.Fatal(err)
	}
	if err := c.Check(tenArgs); err != nil {
		b.Fatal(err)
	}
	for b.Loop() {
		_ = c.Check(tenArgs)
	}
}

// BenchmarkValidatePlain10Properties is the floor Check is measured against: google/jsonschema-go
// validating the same call against the plain (approved) schema, as every agent's call already is.
func BenchmarkValidatePlain10Properties(b *testing.B) {
	r := resolve(b, json.RawMessage(tenSchema))
	if err := r.Validate(tenArgs); err != nil {
		b.Fatal(err)
	}
	for b.Loop() {
		_ = r.Validate(tenArgs)
	}
}

// BenchmarkCatastrophicPattern: ^(a+)+$ against n a's and a b, which takes a backtracking
// engine some 2^n steps (at n = 30, a billion). Go's RE2 takes time linear in the string: per
// byte (MB/s) it runs as fast at n = 3000 as at n = 30, and within a small factor of
// BenchmarkLinearPatternFloor, a pattern no engine backtracks on, over the same strings:
//
//	go test -run '^$' -bench 'CatastrophicPattern|LinearPatternFloor' ./app/limits/
func BenchmarkCatastrophicPattern(b *testing.B) { benchmarkPattern(b, "^(a+)+$") }

// BenchmarkLinearPatternFloor is the floor BenchmarkCatastrophicPattern is measured against:
// ^[ab]*a$ fails on the same strings at their last byte, after one pass.
func BenchmarkLinearPatternFloor(b *testing.B) { benchmarkPattern(b, "^[ab]*a$") }

// benchmarkPattern checks n a's and a b against pattern, which must refuse them, for n from
// 30 to 3000.
func benchmarkPattern(b *testing.B, pattern string) {
	c, err := limits.Compile(set(b, `{"properties":{"code":{"pattern":`+strconv.Quote(pattern)+`}}}`))
	if err != nil {
		b.Fatal(err)
	}
	for _, n := range []int{30, 300, 3000} {
		args := map[string]any{"code": strings.Repeat("a", n) + "b"}
		b.Run(fmt.Sprintf("n=%d", n), func(b *testing.B) {
			b.SetBytes(int64(n + 1))
			for b.Loop() {
				if c.Check(args) == nil {
					b.Fatalf("%d a's and a b matched %s", n, pattern)
				}
			}
		})
	}
}
