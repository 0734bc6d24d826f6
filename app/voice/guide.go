package voice

import (
	"context"
	"fmt"
	"math"
	"sort"
	"strings"

	"maven/app/allowlist"
	"maven/app/mcp"
	"maven/app/phrases"
)

// index is what a turn matches against, rebuilt only after the rows or the phrases changed.
type index struct {
	matcher *allowlist.Matcher
	enabled []allowlist.Tool
	schemas map[int64]phrases.Schema // of enabled MCP rows
	// positional are the enabled MCP rows read for rule 15, once per index.
	positional map[int64]mcp.Positional
	saved      map[int64]phrases.Saved // every row's saved phrases, usable or not
	phrased    []phrased               // enabled rows whose phrases apply
}

// phrased is an enabled row with its usable phrases, parsed.
type phrased struct {
	row       allowlist.Tool
	schema    phrases.Schema
	templates []phrases.Template
}

func (s *Service) index(ctx context.Context) (*index, error) {
	rv, pv := s.d.Rows.Version(), uint64(0)
	if s.d.Phrases != nil {
		pv = s.d.Phrases.Version()
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.idx != nil && s.idxRows == rv && s.idxWords == pv {
		return s.idx, nil
	}
	rows, err := s.d.Rows.List(ctx, allowlist.Filter{States: []allowlist.State{allowlist.StateEnabled}})
	if err != nil {
		return nil, err
	}
	saved := map[int64]phrases.Saved{}
	if s.d.Phrases != nil {
		if saved, err = s.d.Phrases.Phrases(ctx, nil); err != nil {
			return nil, err
		}
	}
	idx := &index{matcher: allowlist.NewMatcher(rows), enabled: rows, schemas: map[int64]phrases.Schema{},
		positional: map[int64]mcp.Positional{}, saved: saved}
	for _, row := range rows {
		if !row.IsMCP() {
			continue
		}
		idx.positional[row.ID] = s.d.Binder.Positional(row)
		schema, err := phrases.ReadSchema(row.InputSchema)
		if err != nil {
			s.opts.Logger.Warn("voice: unreadable input schema", "tool", row.Name, "err", err)
			continue
		}
		idx.schemas[row.ID] = schema
		sv := saved[row.ID]
		if !sv.UsableFor(row) {
			continue
		}
		_, templates, err := phrases.Compile(row.RemoteName(), schema, strings.Join(sv.Lines, "\n"))
		if err != nil {
			s.opts.Logger.Warn("voice: saved phrases no longer compile", "tool", row.Name, "err", err)
			continue
		}
		idx.phrased = append(idx.phrased, phrased{row: row, schema: schema, templates: templates})
	}
	s.idx, s.idxRows, s.idxWords = idx, rv, pv
	return idx, nil
}

// Guide is what the tools page shows beside an enabled row.
type Guide struct {
	// Phrases are the owner's saved phrases, for the textarea, whether or not they apply.
	Phrases []string
	// Void is true when phrases were saved for a shape the tool no longer has (it was
	// redefined since) or for a row that is not enabled: they are kept for the owner to see,
	// but voice does not use them.
	Void bool
	// HowToSay tells the owner how voice reaches the tool, its phrases as a person says them:
	// "Say: ‘add 3 and 4’", "Say: ‘echo ⟨message⟩’", or "voice cannot fill its arguments: add
	// a phrase"; "" for a row that is not enabled.
	HowToSay string
}

// Guides returns the Guide of each of rows, by id.
func (s *Service) Guides(ctx context.Context, rows []allowlist.Tool) (map[int64]Guide, error) {
	saved := map[int64]phrases.Saved{}
	if s.d.Phrases != nil {
		ids := make([]int64, len(rows))
		for i, r := range rows {
			ids[i] = r.ID
		}
		var err error
		if saved, err = s.d.Phrases.Phrases(ctx, ids); err != nil {
			return nil, err
		}
	}
	out := make(map[int64]Guide, len(rows))
	for _, row := range rows {
		sv := saved[row.ID]
		out[row.ID] = Guide{Phrases: sv.Lines, Void: len(sv.Lines) > 0 && !sv.UsableFor(row), HowToSay: s.HowToSay(row, sv)}
	}
	return out, nil
}

// HowToSay tells the owner how voice reaches row, given its saved phrases.
func (s *Service) HowToSay(row allowlist.Tool, saved phrases.Saved) string {
	if row.State != allowlist.StateEnabled {
		return ""
	}
	if saved.UsableFor(row) {
		schema, err := phrases.ReadSchema(row.InputSchema)
		if err != nil {
			return "voice cannot fill its arguments: add a phrase"
		}
		forms := make([]string, len(saved.Lines))
		for i, line := range saved.Lines {
			forms[i] = sayPhrase(line, schema, angled)
		}
		return "Say: ‘" + strings.Join(forms, "’ or ‘") + "’"
	}
	var pos mcp.Positional
	if row.IsMCP() {
		pos = s.d.Binder.Positional(row)
	}
	if form := positionalForm(row, pos, angled); form != "" {
		return "Say: ‘" + form + "’"
	}
	return "voice cannot fill its arguments: add a phrase"
}

// positionalForm is how the positional rule reaches row ("echo ⟨message⟩", "list tasks"), ""
// when it cannot fill the row's arguments; pos is the row's, for an MCP row. mark writes the
// spoken property.
func positionalForm(row allowlist.Tool, pos mcp.Positional, mark func(string) string) string {
	if !row.IsMCP() {
		return spokenWords(row.Name)
	}
	name := spokenWords(row.RemoteName())
	_, err := pos.Bind("")
	if err == nil {
		return name
	}
	if prop, ok := unspoken(err); ok {
		return name + " " + mark(prop)
	}
	return ""
}

// help answers "what can I say": how to say each enabled tool, briefly for the ear; Output
// lists every one.
func (s *Service) help(ctx context.Context, idx *index, req Request) Reply {
	type entry struct{ speech, text string }
	var entries []entry
	for _, row := range idx.enabled {
		var speech, text string
		if sv := idx.saved[row.ID]; sv.UsableFor(row) {
			schema := idx.schemas[row.ID]
			speech, text = sayPhrase(sv.Lines[0], schema, spokenWords), sayPhrase(sv.Lines[0], schema, angled)
		} else {
			pos := idx.positional[row.ID] // read once, when the index was built
			speech = positionalForm(row, pos, func(p string) string { return "followed by the " + spokenWords(p) })
			text = positionalForm(row, pos, angled)
		}
		if speech != "" {
			entries = append(entries, entry{speech, fmt.Sprintf("%s (%s)", text, spokenName(row))})
		}
	}
	sort.Slice(entries, func(i, j int) bool { return entries[i].speech < entries[j].speech })
	r := Reply{Outcome: OutcomeHelp}
	switch {
	case len(entries) == 0 && len(idx.enabled) == 0:
		r.Speech = "No tools are enabled yet; enable some on the tools page."
	case len(entries) == 0:
		r.Speech = "None of the enabled tools can be said yet; add phrases on the tools page."
	default:
		const spoken = 5
		var said, all []string
		for i, e := range entries {
			if i < spoken {
				said = append(said, e.speech)
			}
			all = append(all, e.text)
		}
		r.Speech = "You can say: " + strings.Join(said, "; ") + "."
		if len(entries) > spoken {
			r.Speech += fmt.Sprintf(" And %d more; the tools page lists them all.", len(entries)-spoken)
		}
		r.Output = "You can say:\n" + strings.Join(all, "\n")
	}
	s.recordNoRow(ctx, req, r.Outcome, "")
	return r
}

// sayPhrase is a saved phrase as a person would say it (phrases.Template.Example), each slot
// filled with an example of its property: "what is 3 plus 4". A string with no example in the
// schema is written as mark(property).
func sayPhrase(line string, schema phrases.Schema, mark func(string) string) string {
	t, err := phrases.Parse(line)
	if err != nil {
		return ""
	}
	numbers := 0
	return t.Example(func(slot string) string {
		p := schema.Props[slot]
		switch {
		case len(p.Enum) > 0:
			return spokenValue(p.Enum[0])
		case p.Example != nil && fits(p, p.Example):
			return spokenValue(p.Example)
		case p.Type == "boolean":
			return "yes"
		case p.Type == "number" || p.Type == "integer":
			numbers++
			return spokenValue(exampleNumber(p, numbers))
		}
		return mark(slot)
	})
}

// fits reports whether a schema's example value is of its property's type.
func fits(p phrases.Property, v any) bool {
	switch v := v.(type) {
	case string:
		return p.Type == "string"
	case bool:
		return p.Type == "boolean"
	case float64:
		return p.Type == "number" || p.Type == "integer" && v == float64(int64(v))
	}
	return false
}

// exampleNumber is the nth number a phrase is said with (3, 4, 5, …), within the property's
// bounds.
func exampleNumber(p phrases.Property, nth int) float64 {
	n := float64(2 + nth)
	if p.Maximum != nil && n > *p.Maximum {
		n = *p.Maximum
	}
	if p.Minimum != nil && n < *p.Minimum {
		n = *p.Minimum
	}
	if p.Type == "integer" {
		n = math.Ceil(n)
	}
	return n
}

// angled writes a property to fill in: "⟨message⟩".
func angled(property string) string { return "⟨" + property + "⟩" }
