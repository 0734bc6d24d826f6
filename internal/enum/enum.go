// Package enum is the form of Maven's enumerations (docs/style.md#enumerations): one table of
// every member of a typed list, in the list's order, with what is said of each member beside
// it. The list function and the members' methods read the table; a test checks it against the
// constants (internal/enumtest).
package enum

import "slices"

// Table is every member of an enumeration, in order, each with what is said of it.
type Table[M comparable, W any] []Entry[M, W]

// Entry is one member and what is said of it.
type Entry[M comparable, W any] struct {
	Member M
	Said   W
}

// Members returns the members, in order.
func (t Table[M, W]) Members() []M {
	out := make([]M, len(t))
	for i, e := range t {
		out[i] = e.Member
	}
	return out
}

// Of returns what is said of m; false when m is not in the table.
func (t Table[M, W]) Of(m M) (W, bool) {
	if i := slices.IndexFunc(t, func(e Entry[M, W]) bool { return e.Member == m }); i >= 0 {
		return t[i].Said, true
	}
	var none W
	return none, false
}
