package handlers

import (
	"fmt"
	"slices"
	"strings"
	"testing"
)

// TestChosenIDs: /tools?ids= reads ids and ranges of ids, as idsParam writes them, and chooses
// nothing from anything else or from more than maxChosen ids.
func TestChosenIDs(t *testing.T) {
	for _, tt := range []struct {
		param string
		want  []int64
	}{
		{"3", []int64{3}},
		{"3,5-8,10", []int64{3, 5, 6, 7, 8, 10}},
		{"", nil}, {"x", nil}, {"3,", nil}, {"-3", nil}, {"0", nil}, {"8-5", nil}, {"1-1001", nil},
	} {
		if got := parseIDs(tt.param); !slices.Equal(got, tt.want) {
			t.Errorf("%q: %v, want %v", tt.param, got, tt.want)
		}
	}
	if got := parseIDs("1-1000"); len(got) != maxChosen {
		t.Errorf("1,000 ids: %d chosen", len(got))
	}
	if got := parseIDs("1-999,2000-2001"); got != nil {
		t.Errorf("1,001 ids chosen: %d", len(got))
	}
	if got := idsParam([]int64{10, 3, 5, 6, 7, 8, 3}); got != "3,5-8,10" {
		t.Errorf("idsParam: %q", got)
	}
	long := make([]string, 0, 600)
	for i := range 600 {
		long = append(long, fmt.Sprint(2*i+1))
	}
	if got := parseIDs(strings.Join(long, ",")); len(got) != 600 {
		t.Errorf("600 single ids: %d", len(got))
	}
}
