package limits_test

import (
	"encoding/json"
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

// BenchmarkCatastrophicPattern: ^(a+)+$ against thirty a's and a b, which takes a backtracking
// engine some 2^30 steps; Go's RE2 answers in time linear in the string.
func BenchmarkCatastrophicPattern(b *testing.B) {
	c, err := limits.Compile(set(b, `{"properties":{"code":{"pattern":"^(a+)+$"}}}`))
	if err != nil {
		b.Fatal(err)
	}
	args := map[string]any{"code": strings.Repeat("a", 30) + "b"}
	for b.Loop() {
		if c.Check(args) == nil {
			b.Fatal("thirty a's and a b matched")
		}
	}
}
