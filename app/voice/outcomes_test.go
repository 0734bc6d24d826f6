package voice

import (
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"

	"maven/internal/enumtest"
)

// TestEveryOutcomeHasItsWords: every Outcome constant is in outcomes, once, with the words the
// activity feed says of it (docs/style.md#enumerations).
func TestEveryOutcomeHasItsWords(t *testing.T) {
	enumtest.Listed(t, ".", "Outcome", Outcomes())
	for _, o := range outcomes {
		if o.Said == "" {
			t.Errorf("outcome %q has no words in outcomes (voice.go)", o.Member)
		}
	}
}

// TestOutcomesAreTheDocumentedOnes pins Outcomes, in order, to the webhook contract's list in
// docs/design.md#http: a new outcome is added there too, on purpose.
func TestOutcomesAreTheDocumentedOnes(t *testing.T) {
	doc, err := os.ReadFile("../../docs/design.md")
	if err != nil {
		t.Fatal(err)
	}
	_, section, _ := strings.Cut(string(doc), `<a id="http"></a>`)
	section, _, _ = strings.Cut(section, `<a id="`)
	_, list, _ := strings.Cut(section, "`outcome` is one of")
	list, _, _ = strings.Cut(list, "(") // the list ends where what ask means begins
	var documented []Outcome
	for _, m := range regexp.MustCompile("`([a-z_]+)`").FindAllStringSubmatch(list, -1) {
		documented = append(documented, Outcome(m[1]))
	}
	if got := Outcomes(); len(documented) == 0 || !slices.Equal(got, documented) {
		t.Errorf("Outcomes are %v; docs/design.md#http lists %v", got, documented)
	}
}
