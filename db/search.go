package db

import (
	"database/sql/driver"
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/uptrace/bun"
	"modernc.org/sqlite"
)

// The /tools search box finds a row whose name, scope, command or description holds the query,
// ignoring case (docs/design.md#search). A query of three characters or more goes through the
// trigram index, which keeps no positions (detail=none, so that a discovery writes a fraction of
// the index): it names the rows that hold every three-character run of the query, and
// holdsQuery keeps those that hold the query itself. A shorter query is tested on every row.

// holdsQuery adds to q that a row's name, scope, command or description holds query, ignoring
// case. An ASCII query is matched with LIKE, which folds ASCII letters only and so agrees with
// the index's folding for it, several times faster than a call into Go for every row; any other
// query goes to contains_folded, which folds every script.
func holdsQuery(q *bun.SelectQuery, query string) *bun.SelectQuery {
	if isASCII(query) {
		pat := "%" + escapeLike(query) + "%"
		return q.Where("(name LIKE ? ESCAPE '!' OR scope LIKE ? ESCAPE '!' OR cmd LIKE ? ESCAPE '!' OR description LIKE ? ESCAPE '!')",
			pat, pat, pat, pat)
	}
	return q.Where(containsFolded+"(?, name, scope, cmd, description)", query)
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

// trigramQuery is the FTS5 query for the rows holding every three-character run of q, each run
// a quoted string (inside double quotes nothing is syntax but a doubled quote). q has three
// characters or more.
func trigramQuery(q string) string {
	runes := []rune(q)
	seen := make(map[string]bool, len(runes))
	terms := make([]string, 0, len(runes))
	for i := 0; i+3 <= len(runes); i++ {
		run := string(runes[i : i+3])
		if !seen[run] {
			seen[run] = true
			terms = append(terms, `"`+strings.ReplaceAll(run, `"`, `""`)+`"`)
		}
	}
	return strings.Join(terms, " AND ")
}
