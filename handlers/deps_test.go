package handlers_test

import (
	"reflect"
	"strings"
	"testing"

	"maven/handlers"
)

// TestNewRefusesAMissingDependency: New refuses Deps that leave out any dependency the daemon
// always sets, with an error naming it; only the fields Deps says are optional may stay zero.
func TestNewRefusesAMissingDependency(t *testing.T) {
	f := newFixture(t)
	optional := map[string]bool{"Metrics": true, "TLS": true, "Now": true, "TrustedProxies": true, "Agents": true}
	for _, field := range reflect.VisibleFields(reflect.TypeFor[handlers.Deps]()) {
		t.Run(field.Name, func(t *testing.T) {
			d := f.deps()
			reflect.ValueOf(&d).Elem().FieldByIndex(field.Index).SetZero()
			_, err := handlers.New(d)
			switch {
			case optional[field.Name] && err != nil:
				t.Fatalf("without the optional %s: %v", field.Name, err)
			case !optional[field.Name] && (err == nil || !strings.Contains(err.Error(), field.Name)):
				t.Fatalf("without %s: %v, want an error naming it", field.Name, err)
			}
		})
	}
}
