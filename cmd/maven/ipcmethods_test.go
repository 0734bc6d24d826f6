package main

import (
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// TestIPCMethodsAreTheDocumentedOnes pins the IPC surface to the list in docs/design.md#ipc,
// and keeps out any method that would enable or call a tool, or approve a pending call: those
// need the owner's passkey on the web page (docs/security.md#req-38,
// docs/design.md#rule-31). A new method is added here, and to the docs, on purpose.
func TestIPCMethodsAreTheDocumentedOnes(t *testing.T) {
	var got []string
	for name := range (&daemon{}).ipcMethods() {
		got = append(got, name)
		if strings.Contains(name, "enable") || strings.Contains(name, "call") || strings.Contains(name, "run") || strings.Contains(name, "approve") {
			t.Errorf("IPC method %q looks like it enables or runs a tool, or approves a call", name)
		}
	}
	slices.Sort(got)

	doc, err := os.ReadFile("../../docs/design.md")
	if err != nil {
		t.Fatal(err)
	}
	_, section, _ := strings.Cut(string(doc), `<a id="ipc"></a>`)
	list, _, _ := strings.Cut(section, "**There is deliberately no method")
	_, list, _ = strings.Cut(list, "`cmd/maven/daemon.go`:")
	var documented []string
	for _, m := range regexp.MustCompile("`([a-z_]+)`").FindAllStringSubmatch(list, -1) {
		documented = append(documented, m[1])
	}
	slices.Sort(documented)
	if len(documented) == 0 || !slices.Equal(got, documented) {
		t.Errorf("ipcMethods are %v; docs/design.md#ipc lists %v", got, documented)
	}
}
