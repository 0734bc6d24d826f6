package vault

import (
	"regexp"
	"strings"
	"testing"
	"time"
)

var codeShape = regexp.MustCompile(`^[0-9A-HJKMNP-TV-Z]{4}(-[0-9A-HJKMNP-TV-Z]{4}){6}$`)

func TestRecoveryCodeShape(t *testing.T) {
	seen := map[string]bool{}
	for range 200 {
		c := newRecoveryCode()
		s := formatRecoveryCode(c)
		if !codeShape.MatchString(s) {
			t.Fatalf("code %q is not 7 groups of 4 Crockford symbols", s)
		}
		if seen[s] {
			t.Fatalf("code %q drawn twice", s)
		}
		seen[s] = true
		if got := normalizeRecoveryCode(s); string(got) != string(c) {
			t.Fatalf("normalize(format(c)) = %q, want %q", got, c)
		}
	}
}

// codeWith returns a well-formed canonical code whose random part is body (26 symbols).
func codeWith(t *testing.T, body string) string {
	t.Helper()
	if len(body) != codeRandom {
		t.Fatalf("body has %d symbols, want %d", len(body), codeRandom)
	}
	c0, c1 := codeChecksum([]byte(body))
	return body + string([]byte{c0, c1})
}

func TestNormalizeRecoveryCode(t *testing.T) {
	canon := codeWith(t, "0123456789ABCDEFGHJKMNPQRS")
	display := formatRecoveryCode([]byte(canon))
	tests := []struct {
		name, in string
		ok       bool
	}{
		{"as displayed", display, true},
		{"lower case", strings.ToLower(display), true},
		{"no dashes", canon, true},
		{"spaces for dashes", strings.ReplaceAll(display, "-", " "), true},
		{"spaces, tabs and a newline around", " \t" + display + "\n", true},
		{"dashes anywhere", strings.Join(strings.Split(canon, ""), "-"), true},
		{"O for 0, I and L for 1", "O" + "I" + canon[2:], true},
		{"o and l in lower case", "o" + "l" + strings.ToLower(canon[2:]), true},
		{"empty", "", false},
		{"one symbol short", canon[:codeLen-1], false},
		{"one symbol long", canon + "0", false},
		{"U is not in the alphabet", "U" + canon[1:], false},
		{"punctuation", canon[:10] + "." + canon[10:], false},
		{"one symbol changed", "2" + canon[1:], false},
		{"check symbols swapped", canon[:codeRandom] + string(canon[codeRandom+1]) + string(canon[codeRandom]), canon[codeRandom] == canon[codeRandom+1]},
		{"non-ASCII", "Ｏ" + canon[1:], false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := normalizeRecoveryCode(tt.in)
			if tt.ok && string(got) != canon {
				t.Errorf("normalize(%q) = %q, want %q", tt.in, got, canon)
			}
			if !tt.ok && got != nil {
				t.Errorf("normalize(%q) = %q, want rejected", tt.in, got)
			}
		})
	}
}

func TestArgon2Header(t *testing.T) {
	if got, want := defaultArgon2.String(), "argon2id$v=19$m=65536,t=3,p=4"; got != want {
		t.Fatalf("default header = %q, want %q (RFC 9106 second option)", got, want)
	}
	tests := []struct {
		in   string
		want argon2Params
		ok   bool
	}{
		{"argon2id$v=19$m=65536,t=3,p=4", argon2Params{3, 65536, 4}, true},
		{"argon2id$v=19$t=1,p=1,m=1024", argon2Params{1, 1024, 1}, true},
		{"argon2i$v=19$m=65536,t=3,p=4", argon2Params{}, false},
		{"argon2id$v=16$m=65536,t=3,p=4", argon2Params{}, false},
		{"argon2id$v=19$m=65536,t=3", argon2Params{}, false},
		{"argon2id$v=19$m=65536,t=3,p=4,x=1", argon2Params{}, false},
		{"argon2id$v=19$m=65536,t=3,t=3", argon2Params{}, false},
		{"argon2id$v=19$m=65536,t=0,p=4", argon2Params{}, false},
		{"argon2id$v=19$m=65536,t=3,p=0", argon2Params{}, false},
		{"argon2id$v=19$m=65536,t=3,p=256", argon2Params{}, false},
		{"argon2id$v=19$m=16,t=3,p=4", argon2Params{}, false},         // under 8 KiB per lane
		{"argon2id$v=19$m=4294967295,t=3,p=4", argon2Params{}, false}, // would allocate 4 TiB
		{"argon2id$v=19$m=65536,t=100000,p=4", argon2Params{}, false}, // would run for hours
		{"argon2id$v=19$m=-1,t=3,p=4", argon2Params{}, false},
		{"hkdf-sha256", argon2Params{}, false},
	}
	for _, tt := range tests {
		got, err := parseArgon2(tt.in)
		if tt.ok && (err != nil || got != tt.want) {
			t.Errorf("parseArgon2(%q) = %+v, %v; want %+v", tt.in, got, err, tt.want)
		}
		if !tt.ok && err == nil {
			t.Errorf("parseArgon2(%q) = %+v, want an error", tt.in, got)
		}
	}
}

func TestLimiterDelays(t *testing.T) {
	l := NewLimiter(time.Now)
	want := []time.Duration{0, 0, 0, 0, 1 * time.Second, 2 * time.Second, 4 * time.Second, 8 * time.Second}
	for n, w := range want {
		if got := l.delay(n); got != w {
			t.Errorf("delay(%d) = %v, want %v", n, got, w)
		}
	}
	for _, n := range []int{13, 14, 50, 1 << 30} {
		if got := l.delay(n); got != DefaultMaxDelay {
			t.Errorf("delay(%d) = %v, want the cap %v", n, got, DefaultMaxDelay)
		}
	}
}
