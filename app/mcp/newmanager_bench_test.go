package mcp

import (
	"fmt"
	"testing"

	"maven/app/config"
)

// BenchmarkNewManagerHundredServers is the part of a boot that builds one supervisor per
// configured server, with the boot figure's 100 http servers.
func BenchmarkNewManagerHundredServers(b *testing.B) {
	servers := map[string]config.Server{}
	for i := range 100 {
		name := fmt.Sprintf("bh%d", i)
		servers[name] = config.Server{Name: name, Type: config.TransportHTTP, URL: fmt.Sprintf("http://127.0.0.1:%d/mcp", 40000+i)}
	}
	for b.Loop() {
		NewManager(servers, newFakeReconciler(), ManagerOptions{Version: "bench"}, nil)
	}
}

// BenchmarkUnlockHookHundredServers is what an unlock's answer waits for of the manager: its
// hook (SetSecrets with a lookup), with the unlock figure's 100 http servers that all need a
// secret. The wakes it arranges come later, on a timer's goroutine.
func BenchmarkUnlockHookHundredServers(b *testing.B) {
	servers := map[string]config.Server{}
	for i := range 100 {
		name := fmt.Sprintf("bh%d", i)
		servers[name] = config.Server{Name: name, Type: config.TransportHTTP, URL: fmt.Sprintf("http://127.0.0.1:%d/mcp", 40000+i),
			Headers: map[string]string{"Authorization": "Bearer ${secret:tok}"}}
	}
	m := NewManager(servers, newFakeReconciler(), ManagerOptions{Version: "bench"}, nil)
	lookup := func(string) ([]byte, bool) { return []byte("t0k"), true }
	for b.Loop() {
		m.SetSecrets(lookup)
	}
}
