package bench

import (
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"maven/app/mcp/mcptest"
)

// median is the middle of d (the mean of the two middle values for an even count).
func median(d []time.Duration) time.Duration {
	s := slices.Clone(d)
	slices.Sort(s)
	n := len(s)
	if n == 0 {
		return 0
	}
	if n%2 == 1 {
		return s[n/2]
	}
	return (s[n/2-1] + s[n/2]) / 2
}

// quantile is the nearest-rank q-quantile of d.
func quantile(d []time.Duration, q float64) time.Duration {
	s := slices.Clone(d)
	slices.Sort(s)
	if len(s) == 0 {
		return 0
	}
	i := int(math.Ceil(q*float64(len(s)))) - 1
	return s[min(max(i, 0), len(s)-1)]
}

// ratio is a/b.
func ratio(a, b time.Duration) float64 { return float64(a) / float64(b) }

// ms formats d in milliseconds, with more digits the shorter it is.
func ms(d time.Duration) string {
	f := float64(d) / float64(time.Millisecond)
	switch {
	case f < 1:
		return fmt.Sprintf("%.3f ms", f)
	case f < 100:
		return fmt.Sprintf("%.2f ms", f)
	}
	return fmt.Sprintf("%.0f ms", f)
}

// spread describes a sample: median, p99 and min–max.
func spread(d []time.Duration) string {
	s := slices.Clone(d)
	slices.Sort(s)
	return fmt.Sprintf("n=%d median %s p99 %s min %s max %s", len(s), ms(median(s)), ms(quantile(s, 0.99)), ms(s[0]), ms(s[len(s)-1]))
}

// Tool names of the catalog: ten verbs by ten nouns, a hundred per server.
var (
	verbs = []string{"list", "search", "get", "create", "update", "delete", "archive", "move", "rename", "export"}
	nouns = []string{"tasks", "projects", "labels", "comments", "files", "events", "notes", "users", "boards", "tags"}
	// serverBases name the catalog's servers: vikunja0, github0, …, vikunja1, ….
	serverBases = []string{"vikunja", "github", "memory", "filesystem", "homeassistant", "calendar", "mail", "notes", "weather", "music"}
)

// serverName is the name of the catalog's i-th server.
func serverName(i int) string {
	return fmt.Sprintf("%s%d", serverBases[i%len(serverBases)], i/len(serverBases))
}

// catalog returns n tools (n ≤ 100) that look like what MCP servers offer: the reading verbs
// claim read-only and take one required string, the others take a few named arguments.
func catalog(server string, n int) []mcptest.ToolSpec {
	specs := make([]mcptest.ToolSpec, 0, n)
	for i := range n {
		verb, noun := verbs[i/len(nouns)], nouns[i%len(nouns)]
		readOnly := verb == "list" || verb == "search" || verb == "get"
		schema := fmt.Sprintf(`{"type":"object","properties":{"id":{"type":"integer","description":"The %s's id"},`+
			`"title":{"type":"string","description":"A new title"},"project":{"type":"string"}},"required":["id"]}`, noun)
		if readOnly {
			schema = fmt.Sprintf(`{"type":"object","properties":{"query":{"type":"string","description":"Words to look for in %s"}},"required":["query"]}`, noun)
		}
		specs = append(specs, mcptest.ToolSpec{
			Name: verb + "_" + noun,
			Description: fmt.Sprintf("%s %s on %s. Returns at most 50 %s as JSON, newest first; "+
				"fails if the server cannot be reached.", verb, noun, server, noun),
			InputSchema: json.RawMessage(schema),
			ReadOnly:    readOnly,
			Text:        "ok",
		})
	}
	return specs
}

// sdkTools turns specs into the tools a tools/list answer decodes to.
func sdkTools(specs []mcptest.ToolSpec) []*sdk.Tool {
	out := make([]*sdk.Tool, len(specs))
	for i, s := range specs {
		var schema map[string]any
		_ = json.Unmarshal(s.InputSchema, &schema)
		out[i] = &sdk.Tool{Name: s.Name, Description: s.Description, InputSchema: schema,
			Annotations: &sdk.ToolAnnotations{ReadOnlyHint: s.ReadOnly}}
	}
	return out
}
