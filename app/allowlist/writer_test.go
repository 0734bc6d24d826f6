package allowlist_test

import (
	"reflect"
	"slices"
	"testing"

	"maven/app/allowlist"
)

// TestOnlyTheAllowlistWrites: nothing the Service or a Tx hands out (a result, or an argument
// of a callback) has a method of the store, so no package but allowlist can write rows or
// events past the rules: a Tx offers its reads as methods of its own.
func TestOnlyTheAllowlistWrites(t *testing.T) {
	storeMethods := map[string]bool{}
	for _, iface := range []reflect.Type{reflect.TypeFor[allowlist.Store](), reflect.TypeFor[allowlist.TxStore]()} {
		for i := range iface.NumMethod() {
			storeMethods[iface.Method(i).Name] = true
		}
	}
	own := map[reflect.Type]bool{reflect.TypeFor[*allowlist.Service](): true, reflect.TypeFor[*allowlist.Tx](): true}
	check := func(where string, typ reflect.Type) {
		if own[typ] {
			return
		}
		var found []string
		for _, x := range slices.Compact([]reflect.Type{typ, elem(typ)}) {
			for i := range x.NumMethod() {
				if storeMethods[x.Method(i).Name] {
					found = append(found, x.Method(i).Name)
				}
			}
		}
		if len(found) > 0 {
			t.Errorf("%s hands out %s, which has the store's methods %v", where, typ, found)
		}
	}
	for typ := range own {
		for i := range typ.NumMethod() {
			m := typ.Method(i)
			where := typ.String() + "." + m.Name
			for j := range m.Type.NumOut() {
				check(where, m.Type.Out(j))
			}
			for j := range m.Type.NumIn() {
				if in := m.Type.In(j); in.Kind() == reflect.Func {
					for k := range in.NumIn() {
						check(where+"'s callback", in.In(k))
					}
				}
			}
		}
	}
}

// elem is what a pointer, slice or map holds; typ itself for anything else.
func elem(typ reflect.Type) reflect.Type {
	switch typ.Kind() {
	case reflect.Pointer, reflect.Slice, reflect.Array, reflect.Map:
		return typ.Elem()
	}
	return typ
}
