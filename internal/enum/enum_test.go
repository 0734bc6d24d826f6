package enum

import (
	"slices"
	"testing"
)

func TestTable(t *testing.T) {
	colours := Table[string, int]{{"red", 1}, {"green", 2}}
	if got := colours.Members(); !slices.Equal(got, []string{"red", "green"}) {
		t.Errorf("Members = %v", got)
	}
	if said, ok := colours.Of("green"); !ok || said != 2 {
		t.Errorf("Of(green) = %d, %v", said, ok)
	}
	if said, ok := colours.Of("blue"); ok || said != 0 {
		t.Errorf("Of(blue) = %d, %v; want nothing", said, ok)
	}
}
