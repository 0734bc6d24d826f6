package jcs

import (
	"encoding/json"
	"math"
	"math/rand/v2"
	"slices"
	"strconv"
	"testing"
	"unicode/utf16"
	"unicode/utf8"
)

// The number table of RFC 8785 Appendix B.
func TestCanonicalizeNumbersRFC8785(t *testing.T) {
	tests := []struct {
		bits uint64
		want string
	}{
		{0x0000000000000000, "0"},
		{0x8000000000000000, "0"},
		{0x0000000000000001, "5e-324"},
		{0x8000000000000001, "-5e-324"},
		{0x7fefffffffffffff, "1.7976931348623157e+308"},
		{0xffefffffffffffff, "-1.7976931348623157e+308"},
		{0x4340000000000000, "9007199254740992"},
		{0xc340000000000000, "-9007199254740992"},
		{0x4430000000000000, "295147905179352830000"},
		{0x44b52d02c7e14af5, "9.999999999999997e+22"},
		{0x44b52d02c7e14af6, "1e+23"},
		{0x44b52d02c7e14af7, "1.0000000000000001e+23"},
		{0x444b1ae4d6e2ef4e, "999999999999999700000"},
		{0x444b1ae4d6e2ef4f, "999999999999999900000"},
		{0x444b1ae4d6e2ef50, "1e+21"},
		{0x3eb0c6f7a0b5ed8c, "9.999999999999997e-7"},
		{0x3eb0c6f7a0b5ed8d, "0.000001"},
		{0x41b3de4355555553, "333333333.3333332"},
		{0x41b3de4355555554, "333333333.33333325"},
		{0x41b3de4355555555, "333333333.3333333"},
		{0x41b3de4355555556, "333333333.3333334"},
		{0x41b3de4355555557, "333333333.33333343"},
		{0xbecbf647612f3696, "-0.0000033333333333333333"},
		{0x43143ff3c1cb0959, "1424953923781206.2"},
		// Beyond Appendix B: neighbours of 2**68 and 1e20.
		{0x4430000000000001, "295147905179352900000"},
		{0x4430000000000002, "295147905179352960000"},
		{0x4415af1d78b58c3f, "99999999999999980000"},
		{0x4415af1d78b58c40, "100000000000000000000"},
	}
	for _, tt := range tests {
		f := math.Float64frombits(tt.bits)
		t.Run(tt.want, func(t *testing.T) {
			if got := number(f); got != tt.want {
				t.Errorf("number(%#016x) = %s, want %s", tt.bits, got, tt.want)
			}
			// The same value written out by Go, then canonicalized, gives the same text.
			in := strconv.FormatFloat(f, 'g', -1, 64)
			got, err := Canonicalize([]byte(in))
			if err != nil {
				t.Fatalf("Canonicalize(%s): %v", in, err)
			}
			if string(got) != tt.want {
				t.Errorf("Canonicalize(%s) = %s, want %s", in, got, tt.want)
			}
		})
	}
}

func TestCanonicalizeNumberLayouts(t *testing.T) {
	tests := []struct{ in, want string }{
		{"1.0", "1"},
		{"-0", "0"},
		{"-0.0e10", "0"},
		{"1e21", "1e+21"},
		{"1e20", "100000000000000000000"},
		{"1e-7", "1e-7"},
		{"0.000001", "0.000001"},
		{"0.0000012345", "0.0000012345"},
		{"1.5e-7", "1.5e-7"},
		{"123456789012345680000", "123456789012345680000"},
		{"4.50", "4.5"},
		{"2e-3", "0.002"},
		{"1E30", "1e+30"},
		{"-1.25e+300", "-1.25e+300"},
		{"12.5", "12.5"},
		{"1e-400", "0"}, // underflows to zero, which is a double
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			got, err := Canonicalize([]byte(tt.in))
			if err != nil {
				t.Fatal(err)
			}
			if string(got) != tt.want {
				t.Errorf("got %s, want %s", got, tt.want)
			}
		})
	}
}

// Every formatted number must read back as the same double.
func TestJCSNumberRoundTrips(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for range 200000 {
		f := math.Float64frombits(r.Uint64())
		if math.IsNaN(f) || math.IsInf(f, 0) {
			continue
		}
		s := number(f)
		back, err := strconv.ParseFloat(s, 64)
		if err != nil || back != f {
			t.Fatalf("number(%v) = %s, reads back as %v (%v)", f, s, back, err)
		}
	}
}

// FuzzCompareUTF16: CompareUTF16 orders any two valid strings as their UTF-16 code units do,
// which is what JCS sorts object keys by.
func FuzzCompareUTF16(f *testing.F) {
	for _, p := range [][2]string{
		{"a", "b"}, {"ab", "a"}, {"", "x"}, {"€", "😀"}, {"\uffff", "😀"}, {"a\ue000", "a😀"},
		{"דּ", "\r"}, {"same", "same"}, {"pre€", "pre"}, {"x😀y", "x😀z"},
	} {
		f.Add(p[0], p[1])
	}
	f.Fuzz(func(t *testing.T, a, b string) {
		if !utf8.ValidString(a) || !utf8.ValidString(b) {
			return
		}
		want := slices.Compare(utf16.Encode([]rune(a)), utf16.Encode([]rune(b)))
		if got := CompareUTF16(a, b); (got > 0) != (want > 0) || (got < 0) != (want < 0) {
			t.Fatalf("CompareUTF16(%q, %q) = %d, UTF-16 order says %d", a, b, got, want)
		}
	})
}

// TestCanonicalizingASchemaAllocatesOnce: a decoded input schema is written into one buffer,
// its objects' members sorted where they lie, with no allocation for each object: every tool of
// every list is canonicalised again at each refresh.
func TestCanonicalizingASchemaAllocatesOnce(t *testing.T) {
	var schema any
	if err := json.Unmarshal([]byte(`{"type":"object","properties":{"id":{"type":"integer","description":"The task's id"},`+
		`"title":{"type":"string","description":"A new title"},"project":{"type":"string"}},"required":["id"]}`), &schema); err != nil {
		t.Fatal(err)
	}
	if n := testing.AllocsPerRun(100, func() {
		if _, err := CanonicalizeValue(schema); err != nil {
			t.Fatal(err)
		}
	}); n > 1 {
		t.Fatalf("%v allocations to canonicalise a schema of four objects, want 1", n)
	}
}
