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
