// Package views holds Maven's html/template pages and HTMX partials, embedded and parsed once at
// start. A partial's name is its path without ".html" ("tools/_row"), and full pages include the
// same partials, so a full load and an HTMX swap render the same markup. Templates receive the
// view models of models.go, never app structs.
package views

import (
	"embed"
	"fmt"
	"html/template"
	"io"
	"io/fs"
	"path"
	"strings"
)

//go:embed all:templates
var files embed.FS // all: keeps the partials, whose names start with "_"

// Page names, for Templates.Page.
const (
	PageTools    = "tools"
	PagePasskeys = "passkeys"
	PageSetup    = "setup"
	PageLogin    = "login"
	PageError    = "error"
	PageUnlock   = "unlock"
	PageSecrets  = "secrets"
	PageActivity = "activity"
	// PageWrongHost refuses a page asked for at an address Maven is not configured for.
	PageWrongHost = "wrong_host"
)

// Partial names, for Templates.Partial.
const (
	PartialToolList = "tools/_list"
	PartialToolRow  = "tools/_row"
	// PartialToolChanged answers an action on a row (RowChange).
	PartialToolChanged = "tools/_changed"
	PartialServers     = "servers/_card"
	PartialPasskeyList = "passkeys/_list"
	PartialFlash       = "shared/_flash"
	PartialSecrets     = "secrets/_card"
	PartialRecovery    = "secrets/_recovery"
	// PartialActivityList is one page of the activity feed (ActivityList).
	PartialActivityList = "activity/_list"
)

// Templates are the parsed pages and partials.
type Templates struct {
	partials *template.Template
	pages    map[string]*template.Template
}

// Parse parses every template. asset maps a static file name to its URL. A template that fails
// to parse, or a page or partial named above that does not exist, is an error: the daemon does
// not start with a broken view.
func Parse(asset func(name string) string) (*Templates, error) {
	base := template.New("").Funcs(template.FuncMap{"asset": asset})
	var pageFiles []string
	err := fs.WalkDir(files, "templates", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		name := strings.TrimSuffix(strings.TrimPrefix(p, "templates/"), ".html")
		if strings.HasPrefix(name, "pages/") {
			pageFiles = append(pageFiles, p)
			return nil
		}
		return parseFile(base, name, p)
	})
	if err != nil {
		return nil, err
	}
	t := &Templates{partials: base, pages: map[string]*template.Template{}}
	for _, p := range pageFiles {
		page, err := base.Clone()
		if err != nil {
			return nil, fmt.Errorf("views: %w", err)
		}
		if err := parseFile(page, "content", p); err != nil {
			return nil, err
		}
		t.pages[path.Base(strings.TrimSuffix(p, ".html"))] = page
	}
	for _, name := range []string{PageTools, PagePasskeys, PageSetup, PageLogin, PageError, PageUnlock, PageSecrets, PageWrongHost, PageActivity, PageConsent, PageClients} {
		if t.pages[name] == nil {
			return nil, fmt.Errorf("views: page %q is missing", name)
		}
	}
	for _, name := range []string{"layout", PartialToolList, PartialToolRow, PartialToolChanged, PartialServers, PartialPasskeyList, PartialFlash, PartialSecrets, PartialRecovery, PartialActivityList, PartialClientList} {
		if base.Lookup(name) == nil {
			return nil, fmt.Errorf("views: template %q is missing", name)
		}
	}
	return t, nil
}

// parseFile adds the file at p to t under name. The final newline is dropped, so a partial
// rendered inside preformatted text adds no blank line.
func parseFile(t *template.Template, name, p string) error {
	b, err := files.ReadFile(p)
	if err != nil {
		return fmt.Errorf("views: %w", err)
	}
	if _, err := t.New(name).Parse(strings.TrimSuffix(string(b), "\n")); err != nil {
		return fmt.Errorf("views: %s: %w", p, err)
	}
	return nil
}

// Page renders the full page name (the layout around the page's content) with data.
func (t *Templates) Page(w io.Writer, name string, data any) error {
	page, ok := t.pages[name]
	if !ok {
		return fmt.Errorf("views: no page %q", name)
	}
	return page.ExecuteTemplate(w, "layout", data)
}

// Partial renders the partial name with data.
func (t *Templates) Partial(w io.Writer, name string, data any) error {
	return t.partials.ExecuteTemplate(w, name, data)
}
