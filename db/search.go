package db

import (
	"database/sql/driver"
	"fmt"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/uptrace/bun"
	"modernc.org/sqlite"

	"maven/app/allowlist"
)

// The /tools search box finds a row whose name, scope, command or description holds the query,
// ignoring case, or, for a query of several words, holds every word of it in any order as the
// start of a word, words split as voice splits them ('_' and '-' read as spaces): "tasks list"
// finds list_tasks, "get sum" get-sum (docs/design.md#search). The trigram index, which keeps no positions
// (detail=none, so that a discovery writes a fraction of the index), names the candidates: the
// rows that hold every three-character run of the query, or of each of its words; the check on
// the row keeps those that match. A query shorter than three characters, or of words all
// shorter, is tested on every row as written.

// searchCandidates is the SQL that a row is a candidate for the FTS5 query its argument: the
// index names it, or it is not indexed yet (the upkeep indexes new rows once writes pause, so
// those are the last few a discovery added: db.Upkeep).
const searchCandidates = "id IN (SELECT rowid FROM tools_search WHERE tools_search MATCH ? " +
	"UNION ALL SELECT id FROM tools WHERE id > (SELECT id FROM tools_search_through))"

// matchQuery adds to q that a row matches query: narrowed by the index when the query, or one of
// its words, has three characters or more, then checked on the row.
func matchQuery(q *bun.SelectQuery, query string) *bun.SelectQuery {
	words := queryWords(query)
	switch {
	case words != nil:
		// Every row that holds the query as written holds each of its words too.
		q = q.Where(searchCandidates, trigramQuery(words...))
	case utf8.RuneCountInString(query) >= 3:
		q = q.Where(searchCandidates, trigramQuery(query))
	}
	held, args := holdsQuery(query)
	if words == nil {
		return q.Where(held, args...)
	}
	return q.Where("("+held+" OR "+hasWords+"(?, name, scope, cmd, description))", append(args, strings.Join(words, " "))...)
}

// queryWords are the words of query as voice hears them (allowlist.SpokenWords), when the
// query is one of several words, each of two characters or more (a letter alone is not a word
// to look for: "archive_b" is not "archive" and any "b") and one of three or more, so the index
// narrows by it; nil otherwise, and the query is matched only as written.
func queryWords(query string) []string {
	words := allowlist.SpokenWords(query)
	short := func(w string) bool { return utf8.RuneCountInString(w) < 2 }
	long := func(w string) bool { return utf8.RuneCountInString(w) >= 3 }
	if len(words) < 2 || slices.ContainsFunc(words, short) || !slices.ContainsFunc(words, long) {
		return nil
	}
	return words
}

// holdsQuery is the SQL that a row's name, scope, command or description holds query, ignoring
// case, with its arguments. An ASCII query is matched with LIKE, which folds ASCII letters only
// and so agrees with the index's folding for it, several times faster than a call into Go for
// every row; any other query goes to contains_folded, which folds every script.
func holdsQuery(query string) (string, []any) {
	if isASCII(query) {
		pat := "%" + escapeLike(query) + "%"
		return "(name LIKE ? ESCAPE '!' OR scope LIKE ? ESCAPE '!' OR cmd LIKE ? ESCAPE '!' OR description LIKE ? ESCAPE '!')",
			[]any{pat, pat, pat, pat}
	}
	return containsFolded + "(?, name, scope, cmd, description)", []any{query}
}

// escapeLike makes s match itself literally in a LIKE pattern with ESCAPE '!'.
func escapeLike(s string) string {
	return strings.NewReplacer("!", "!!", "%", "!%", "_", "!_").Replace(s)
}

// containsFolded is the SQL function contains_folded(query, text...): 1 if any text holds query,
// both folded to lower case as the trigram index folds them, else 0.
const containsFolded = "contains_folded"

func containsFoldedSQL(_ *sqlite.FunctionContext, args []driver.Value) (driver.Value, error) {
	if len(args) < 2 {
		return nil, fmt.Errorf("%s takes a query and at least one text", containsFolded)
	}
	query := strings.ToLower(sqlText(args[0]))
	for _, a := range args[1:] {
		if strings.Contains(strings.ToLower(sqlText(a)), query) {
			return int64(1), nil
		}
	}
	return int64(0), nil
}

// hasWords is the SQL function has_words(words, text...): 1 if each of the space-separated
// words (lower case, as queryWords gives them) starts a word of some text, words of the texts
// split as allowlist.SpokenWords splits them, else 0.
const hasWords = "has_words"

func hasWordsSQL(_ *sqlite.FunctionContext, args []driver.Value) (driver.Value, error) {
	if len(args) < 2 {
		return nil, fmt.Errorf("%s takes words and at least one text", hasWords)
	}
	var have []string
	for _, a := range args[1:] {
		have = append(have, allowlist.SpokenWords(sqlText(a))...)
	}
	for w := range strings.FieldsSeq(sqlText(args[0])) {
		if !slices.ContainsFunc(have, func(h string) bool { return strings.HasPrefix(h, w) }) {
			return int64(0), nil
		}
	}
	return int64(1), nil
}

func isASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] >= utf8.RuneSelf {
			return false
		}
	}
	return true
}

// sqlText is the text of an SQL value; NULL and numbers hold no text searched for.
func sqlText(v driver.Value) string {
	switch v := v.(type) {
	case string:
		return v
	case []byte:
		return string(v)
	default:
		return ""
	}
}

// trigramQuery is the FTS5 query for the rows holding every three-character run of each of
// texts, each run a quoted string (inside double quotes nothing is syntax but a doubled quote).
// One text at least has three characters or more.
func trigramQuery(texts ...string) string {
	seen := map[string]bool{}
	var terms []string
	for _, text := range texts {
		runes := []rune(text)
		for i := 0; i+3 <= len(runes); i++ {
			run := string(runes[i : i+3])
			if !seen[run] {
				seen[run] = true
				terms = append(terms, `"`+strings.ReplaceAll(run, `"`, `""`)+`"`)
			}
		}
	}
	return strings.Join(terms, " AND ")
}
