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
	"maps"
	"slices"
	"strings"
	tparse "text/template/parse"
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
	// PageApprovals lists the pending calls; PageApproval is one of them, where it is approved.
	PageApprovals = "approvals"
	PageApproval  = "approval"
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
	// PartialPush is the notifications card (PushCard).
	PartialPush = "push/_subscribe"
	// PartialApprovalList is the live list of pending calls (ApprovalList), PartialApprovalCall
	// one call (ApprovalCard), and PartialApprovalStatus its state and time left, polled.
	PartialApprovalList   = "approvals/_list"
	PartialApprovalCall   = "approvals/_call"
	PartialApprovalStatus = "approvals/_status"
)

// layout is the template every page is rendered in, around the page's "content".
const layout = "layout"

// models is every template but the layout, by name, with the zero value of the view model it
// is rendered with: a page by its file's name under pages/ ("tools"), a partial by its path
// ("tools/_row"). Parse refuses a template missing here and an entry without its template, and
// TestEveryTemplateRendersItsZeroModel renders each one (docs/style.md#enumerations).
func models() map[string]any {
	return map[string]any{
		PageTools: ToolsPage{}, PagePasskeys: PasskeysPage{}, PageSetup: SetupPage{}, PageLogin: LoginPage{},
		PageError: ErrorPage{}, PageUnlock: UnlockPage{}, PageSecrets: SecretsPage{}, PageActivity: ActivityPage{},
		PageWrongHost: WrongHostPage{}, PageConsent: ConsentPage{}, PageClients: ClientsPage{},
		PageApprovals: ApprovalsPage{}, PageApproval: ApprovalPage{},

		PartialToolList: ToolList{}, PartialToolRow: ToolRow{}, PartialToolChanged: RowChange{},
		PartialServers: ServersCard{}, PartialPasskeyList: PasskeyList{}, PartialFlash: Flash{},
		PartialSecrets: SecretsCard{}, PartialRecovery: RecoveryCard{}, PartialActivityList: ActivityList{},
		PartialClientList: ClientList{},
		PartialPush:       PushCard{}, PartialApprovalList: ApprovalList{}, PartialApprovalCall: ApprovalCard{},
		PartialApprovalStatus: ApprovalCard{},

		// The partials only other templates include.
		"shared/_origin_check": Reach{}, "shared/_reach_fix": Reach{}, "shared/_prf": nil, // _prf reads nothing
		"shared/_text": Text{}, "shared/_time": Time{},
		"tools/_config": ConfigNotes{}, "tools/_config_problem": ConfigProblem{}, "tools/_filters": Filters{},
		"tools/_start": ConfigInfo{}, "tools/_voice": ToolRow{}, "tools/_limits": ToolRow{},
	}
}

// Templates are the parsed pages and partials.
type Templates struct {
	partials *template.Template
	pages    map[string]*template.Template
}

// Parse parses every template. asset maps a static file name to its URL. A template that fails
// to parse, a template models does not name, and a name in models without its template are
// errors: the daemon does not start with a broken view.
func Parse(asset func(name string) string) (*Templates, error) {
	root, err := fs.Sub(files, "templates")
	if err != nil {
		return nil, fmt.Errorf("views: %w", err)
	}
	return parse(root, models(), asset)
}

// parse parses the templates in fsys, which must be exactly those models names and the layout.
func parse(fsys fs.FS, models map[string]any, asset func(name string) string) (*Templates, error) {
	funcs := template.FuncMap{"asset": asset}
	base := template.New("").Funcs(funcs)
	pageFiles := map[string]string{} // page name → file
	found := map[string]bool{}
	err := fs.WalkDir(fsys, ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		name := strings.TrimSuffix(p, ".html")
		page, isPage := strings.CutPrefix(name, "pages/")
		if isPage {
			name = page
		}
		if _, ok := models[name]; !ok && name != layout {
			return fmt.Errorf("views: %s has no entry in models (views.go): add %q with the zero value of its view model", p, name)
		}
		found[name] = true
		if isPage {
			pageFiles[name] = p
			return nil
		}
		return parseFile(fsys, base, name, p)
	})
	if err != nil {
		return nil, err
	}
	if !found[layout] {
		return nil, fmt.Errorf("views: template %q is missing", layout)
	}
	for _, name := range slices.Sorted(maps.Keys(models)) {
		if !found[name] {
			return nil, fmt.Errorf("views: models names %q, which has no template", name)
		}
	}
	t := &Templates{partials: base, pages: map[string]*template.Template{}}
	for name, p := range pageFiles {
		page := template.New("").Funcs(funcs)
		if err := parseFile(fsys, page, "content", p); err != nil {
			return nil, err
		}
		// A page holds a copy of the partials it can reach, not of them all: html/template
		// copies every tree of a set it clones (its escaping rewrites them), and thirteen pages
		// each cloning every partial were 4.5 MiB of the daemon's heap (bench/README.md).
		for _, n := range reachable(base, page) {
			if _, err := page.AddParseTree(n, base.Lookup(n).Tree.Copy()); err != nil {
				return nil, fmt.Errorf("views: %s: %w", p, err)
			}
		}
		t.pages[name] = page
	}
	return t, nil
}

// reachable names the templates of partials that page (its content) and the layout include,
// directly or through one another, that page does not define itself.
func reachable(partials, page *template.Template) []string {
	var names []string
	seen := map[string]bool{}
	var visit func(name string)
	visit = func(name string) {
		if seen[name] {
			return
		}
		seen[name] = true
		t := page.Lookup(name)
		if t == nil {
			if t = partials.Lookup(name); t == nil || t.Tree == nil {
				return // executing the page says what is missing, as it did when pages cloned every partial
			}
			names = append(names, name)
		}
		if t.Tree != nil {
			templateCalls(t.Tree.Root, visit)
		}
	}
	visit("content")
	visit(layout)
	return names
}

// templateCalls calls call with the name of every template n includes ({{template "name"}}).
func templateCalls(n tparse.Node, call func(name string)) {
	switch n := n.(type) {
	case *tparse.ListNode:
		if n == nil {
			return
		}
		for _, c := range n.Nodes {
			templateCalls(c, call)
		}
	case *tparse.TemplateNode:
		call(n.Name)
	case *tparse.IfNode:
		templateCalls(n.List, call)
		templateCalls(n.ElseList, call)
	case *tparse.RangeNode:
		templateCalls(n.List, call)
		templateCalls(n.ElseList, call)
	case *tparse.WithNode:
		templateCalls(n.List, call)
		templateCalls(n.ElseList, call)
	}
}

// parseFile adds the file at p to t under name. The final newline is dropped, so a partial
// rendered inside preformatted text adds no blank line.
func parseFile(fsys fs.FS, t *template.Template, name, p string) error {
	b, err := fs.ReadFile(fsys, p)
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
	return page.ExecuteTemplate(w, layout, data)
}

// Partial renders the partial name with data.
func (t *Templates) Partial(w io.Writer, name string, data any) error {
	return t.partials.ExecuteTemplate(w, name, data)
}
