package views

import (
	"bytes"
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
