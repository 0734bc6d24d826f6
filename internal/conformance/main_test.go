package main

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http/httptest"
	"os/exec"
	"slices"
	"strings"
	"sync"
	"testing"

	"maven/app/mcp/mcptest"
)

// scenarioEnv is a getenv that names scenario as the suite does.
func scenarioEnv(scenario string) func(string) string {
	return func(k string) string {
		if k == "MCP_CONFORMANCE_SCENARIO" {
			return scenario
		}
		return ""
	}
}

// TestToolsCallStepsDriveMaven runs the command's tools_call steps, in process and without
// Node, against a go-sdk server offering the suite's add_numbers: the real daemon calls it with
// the numbers said, and the command fails when the answer is not the sum.
func TestToolsCallStepsDriveMaven(t *testing.T) {
	bin := build(t, t.TempDir(), "maven", "maven/cmd/maven")
	for _, tc := range []struct{ name, answer, wantErr string }{
		{"the sum", "The sum of 3 and 4 is 7", ""},
		{"a wrong sum", "The sum of 3 and 4 is 8", `want outcome ran with "The sum of 3 and 4 is 7"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := mcptest.NewScripted(mcptest.ToolSpec{
				Name: "add_numbers", Description: "Add two numbers together", Text: tc.answer,
				InputSchema: json.RawMessage(`{"type":"object","properties":{"a":{"type":"number"},"b":{"type":"number"}},"required":["a","b"]}`),
			})
			var mu sync.Mutex
			var calls []string
			s.OnCall = func(_ string, args json.RawMessage) {
				mu.Lock()
				defer mu.Unlock()
				calls = append(calls, string(args))
			}
			srv := httptest.NewServer(s.HTTPHandler())
			defer srv.Close()
			defer s.Close()

			var log bytes.Buffer
			err := run(context.Background(), []string{"-maven", bin, srv.URL}, scenarioEnv("tools_call"), &log)
			switch {
			case tc.wantErr == "" && err != nil:
				t.Fatalf("%v\n%s", err, log.String())
			case tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)):
				t.Fatalf("got %v, want an error with %q\n%s", err, tc.wantErr, log.String())
			}
			mu.Lock()
			defer mu.Unlock()
			if len(calls) != 1 || calls[0] != `{"a":3,"b":4}` {
				t.Fatalf("add_numbers was called with %q, want once with a 3 and b 4\n%s", calls, log.String())
			}
		})
	}
}

// TestUnknownScenarioFailsLoudly: a scenario without steps is an error naming where to add them,
// before any daemon starts.
func TestUnknownScenarioFailsLoudly(t *testing.T) {
	var log bytes.Buffer
	err := run(context.Background(), []string{"-maven", "/nonexistent/maven", "http://127.0.0.1:1/mcp"}, scenarioEnv("auth/nope"), &log)
	if err == nil || !strings.Contains(err.Error(), `no steps for scenario "auth/nope" in internal/conformance/scenarios.go`) {
		t.Fatalf("got %v", err)
	}
	err = run(context.Background(), []string{"http://127.0.0.1:1/mcp"}, scenarioEnv("initialize"), &log)
	if err == nil || !strings.Contains(err.Error(), "usage: maven-conformance -maven PATH") {
		t.Fatalf("without -maven: %v", err)
	}
}

// TestNotLinkedIntoMaven: the harness and what it shares with tests stay out of the binary, and no
// package of Maven's imports testing. fosite v0.49.0 links testing itself — its storage package
// (which handler/oauth2 imports) reads internal.TestLifespans, whose package imports gomock and
// testify, and ory/x/otelx links the jaeger exporter's thrift copy — so testing is allowed only as
// an import of those named third-party packages.
func TestNotLinkedIntoMaven(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", "-f", `{{.ImportPath}}{{range .Imports}} {{.}}{{end}}`, "maven/cmd/maven").Output()
	if err != nil {
		t.Fatalf("go list -deps maven/cmd/maven: %v", err)
	}
	importsTestingUpstream := map[string]bool{
		"github.com/ory/fosite/internal":      true,
		"github.com/golang/mock/gomock":       true,
		"github.com/stretchr/testify/assert":  true,
		"github.com/stretchr/testify/require": true,
		"go.opentelemetry.io/otel/exporters/jaeger/internal/third_party/thrift/lib/go/thrift": true,
	}
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		pkg, imports, _ := strings.Cut(line, " ")
		switch pkg {
		case "maven/internal/conformance", "maven/internal/daemontest", "maven/app/auth/authtest":
			t.Errorf("maven links %s", pkg)
		}
		if slices.Contains(strings.Fields(imports), "testing") && !importsTestingUpstream[pkg] {
			t.Errorf("maven links testing through %s", pkg)
		}
	}
}
