package views

import (
	"bytes"
	"strings"
	"testing"
)

func TestEveryTemplateRendersItsZeroModel(t *testing.T) {
	tmpl, err := Parse(func(name string) string { return "/static/" + name })
	if err != nil {
		t.Fatal(err)
	}
	pages := map[string]any{
		PageTools: ToolsPage{}, PagePasskeys: PasskeysPage{}, PageSetup: SetupPage{},
		PageLogin: LoginPage{}, PageError: ErrorPage{}, PageUnlock: UnlockPage{}, PageSecrets: SecretsPage{},
	}
	for name, data := range pages {
		var buf bytes.Buffer
		if err := tmpl.Page(&buf, name, data); err != nil {
			t.Errorf("page %s: %v", name, err)
		}
		if !strings.HasPrefix(buf.String(), "<!doctype html>") || !strings.Contains(buf.String(), "</html>") {
			t.Errorf("page %s is not a whole document", name)
		}
	}
	partials := map[string]any{
		PartialToolList: ToolList{}, PartialToolRow: ToolRow{}, PartialServers: ServersCard{},
		PartialPasskeyList: PasskeyList{}, PartialFlash: Flash{}, PartialSecrets: SecretsCard{},
		PartialRecovery: RecoveryCard{},
	}
	for name, data := range partials {
		var buf bytes.Buffer
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
