package runner

import (
	"strings"
	"testing"
	"unicode/utf8"
)

func TestBoundedWriter(t *testing.T) {
	tests := []struct {
		name      string
		limit     int
		writes    []string
		want      string
		truncated bool
	}{
		{name: "empty", limit: 8, want: ""},
		{name: "under the limit", limit: 8, writes: []string{"abc", "def"}, want: "abcdef"},
		{name: "exactly the limit", limit: 6, writes: []string{"abc", "def"}, want: "abcdef"},
		{name: "cut in one write", limit: 4, writes: []string{"abcdef"},
			want: "abcd\n[output cut at 4 bytes, 2 more dropped]", truncated: true},
		{name: "cut across writes", limit: 4, writes: []string{"ab", "cd", "ef", "gh"},
			want: "abcd\n[output cut at 4 bytes, 4 more dropped]", truncated: true},
		{name: "cut after a newline adds none", limit: 4, writes: []string{"abc\ndef"},
			want: "abc\n[output cut at 4 bytes, 3 more dropped]", truncated: true},
		// "€" is three bytes: a cut after its first or second byte drops the partial rune.
		{name: "cut inside a rune", limit: 5, writes: []string{"abcd€"},
			want: "abcd\n[output cut at 4 bytes, 3 more dropped]", truncated: true},
		{name: "cut inside a rune, two bytes kept", limit: 6, writes: []string{"abcd€x"},
			want: "abcd\n[output cut at 4 bytes, 4 more dropped]", truncated: true},
		{name: "cut after a whole rune", limit: 7, writes: []string{"abcd€x"},
			want: "abcd€\n[output cut at 7 bytes, 1 more dropped]", truncated: true},
		{name: "four-byte rune cut", limit: 3, writes: []string{"a😀"},
			want: "a\n[output cut at 1 bytes, 4 more dropped]", truncated: true},
		{name: "binary left alone", limit: 2, writes: []string{"\xff\xfe\xfd"},
			want: "\xff\xfe\n[output cut at 2 bytes, 1 more dropped]", truncated: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w := newBoundedWriter(tt.limit)
			for _, s := range tt.writes {
				n, err := w.Write([]byte(s))
				if n != len(s) || err != nil {
					t.Fatalf("Write(%q) = %d, %v; want %d, nil", s, n, err, len(s))
				}
			}
			got, truncated := w.String()
			if got != tt.want || truncated != tt.truncated {
				t.Errorf("String() = %q, %v; want %q, %v", got, truncated, tt.want, tt.truncated)
			}
			if tt.truncated && utf8.ValidString(strings.Join(tt.writes, "")) && !utf8.ValidString(got) {
				t.Errorf("cut output %q is not valid UTF-8", got)
			}
		})
	}
}

// TestBoundedWriterMemory checks the buffer never grows past the limit however much is written.
func TestBoundedWriterMemory(t *testing.T) {
	const limit = 1000
	w := newBoundedWriter(limit)
	chunk := make([]byte, 333)
	for range 10000 {
		w.Write(chunk)
		if c := cap(w.buf); c > limit {
			t.Fatalf("buffer capacity %d exceeds limit %d", c, limit)
		}
	}
	if w.dropped != 10000*333-limit {
		t.Errorf("dropped = %d, want %d", w.dropped, 10000*333-limit)
	}
}
