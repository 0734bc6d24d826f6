package views

import (
	"bytes"
	"slices"
	"strings"
	"testing"
	"testing/fstest"
)

// TestEveryTemplateRendersItsZeroModel renders every template models names (Parse has checked
// that they are all the templates there are): a page as a whole document, a partial as a part.
func TestEveryTemplateRendersItsZeroModel(t *testing.T) {
	tmpl, err := Parse(func(name string) string { return "/static/" + name })
	if err != nil {
		t.Fatal(err)
	}
	for name, data := range models() {
		var buf bytes.Buffer
		if _, isPage := tmpl.pages[name]; isPage {
			if err := tmpl.Page(&buf, name, data); err != nil {
				t.Errorf("page %s: %v", name, err)
			}
			if !strings.HasPrefix(buf.String(), "<!doctype html>") || !strings.Contains(buf.String(), "</html>") {
				t.Errorf("page %s is not a whole document", name)
			}
			continue
		}
		if err := tmpl.Partial(&buf, name, data); err != nil {
			t.Errorf("partial %s: %v", name, err)
		}
		if strings.Contains(buf.String(), "<html") {
			t.Errorf("partial %s renders a whole page", name)
		}
	}
	if err := tmpl.Page(&bytes.Buffer{}, "nope", nil); err == nil {
		t.Error("an unknown page rendered")
	}
}

// TestParseRefusesATemplateWithoutItsModel: a template models does not name, or a name without
// its template, keeps the daemon from starting.
func TestParseRefusesATemplateWithoutItsModel(t *testing.T) {
	files := fstest.MapFS{
		"layout.html":      {Data: []byte(`{{template "content" .}}`)},
		"pages/home.html":  {Data: []byte(`home`)},
		"shared/_bit.html": {Data: []byte(`bit`)},
	}
	asset := func(name string) string { return name }
	if _, err := parse(files, map[string]any{"home": struct{}{}, "shared/_bit": nil}, asset); err != nil {
		t.Fatalf("the templates and their models match: %v", err)
	}
	for _, c := range []struct {
		name   string
		models map[string]any
		want   string
	}{
		{"a page without a model", map[string]any{"shared/_bit": nil}, "pages/home.html has no entry"},
		{"a partial without a model", map[string]any{"home": struct{}{}}, "shared/_bit.html has no entry"},
		{"a model without a template", map[string]any{"home": struct{}{}, "shared/_bit": nil, "shared/_gone": nil}, `"shared/_gone", which has no template`},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := parse(files, c.models, asset)
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("parse: %v; want an error saying %s", err, c.want)
			}
		})
	}
}

// TestPagesHoldOnlyThePartialsTheyReach: a page's set holds the partials its content and the
// layout include, through branches and one another, and no other (each page holding a copy of
// every partial was 4.5 MiB of the daemon's heap, bench/README.md); and it renders them.
func TestPagesHoldOnlyThePartialsTheyReach(t *testing.T) {
	files := fstest.MapFS{
		"layout.html":       {Data: []byte(`<main>{{template "content" .}}</main>{{template "shared/_foot"}}`)},
		"pages/home.html":   {Data: []byte(`{{range .}}{{template "x/_list" .}}{{else}}{{with 1}}{{template "x/_none"}}{{end}}{{end}}`)},
		"pages/other.html":  {Data: []byte(`other`)},
		"shared/_foot.html": {Data: []byte(`foot`)},
		"x/_list.html":      {Data: []byte(`{{if .}}{{template "x/_row" .}}{{end}}`)},
		"x/_row.html":       {Data: []byte(`row {{.}}`)},
		"x/_none.html":      {Data: []byte(`none`)},
		"x/_unused.html":    {Data: []byte(`unused`)},
	}
	models := map[string]any{"home": nil, "other": nil, "shared/_foot": nil, "x/_list": nil, "x/_row": nil, "x/_none": nil, "x/_unused": nil}
	tmpl, err := parse(files, models, func(name string) string { return name })
	if err != nil {
		t.Fatal(err)
	}
	for page, want := range map[string][]string{
		"home":  {"shared/_foot", "x/_list", "x/_row", "x/_none"},
		"other": {"shared/_foot"},
	} {
		var held []string
		for _, tt := range tmpl.pages[page].Templates() {
			if _, partial := models[tt.Name()]; partial {
				held = append(held, tt.Name())
			}
		}
		slices.Sort(held)
		slices.Sort(want)
		if !slices.Equal(held, want) {
			t.Errorf("page %s holds the partials %v; want %v", page, held, want)
		}
	}
	var buf bytes.Buffer
	if err := tmpl.Page(&buf, "home", []int{7}); err != nil || buf.String() != "<main>row 7</main>foot" {
		t.Errorf("home rendered %q, %v", buf.String(), err)
	}
	buf.Reset()
	if err := tmpl.Page(&buf, "home", []int{}); err != nil || buf.String() != "<main>none</main>foot" {
		t.Errorf("home with nothing rendered %q, %v", buf.String(), err)
	}
}

func TestTextShowsHiddenCharactersVisibly(t *testing.T) {
	tmpl, err := Parse(func(name string) string { return name })
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	row := ToolRow{ID: 1, Name: "x", NameText: Text{{Text: "a"}, {Text: "U+200B", Hidden: true, Why: "zero-width space"}, {Text: "<b>"}}}
	if err := tmpl.Partial(&buf, PartialToolRow, row); err != nil {
		t.Fatal(err)
	}
	want := `a<mark class="hidden-char" title="zero-width space">⟨U&#43;200B⟩</mark>&lt;b&gt;`
	if !strings.Contains(buf.String(), want) {
		t.Fatalf("row name rendered as:\n%s", buf.String())
	}
}
