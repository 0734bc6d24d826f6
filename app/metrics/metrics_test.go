package metrics_test

import (
	"strings"
	"testing"
	"time"

	"maven/app/metrics"
)

func TestWriteText(t *testing.T) {
	r := metrics.New()
	r.Inc("maven_voice_turns_total", "Voice turns by outcome.", metrics.Label{Name: "outcome", Value: "ran"})
	r.Inc("maven_voice_turns_total", "Voice turns by outcome.", metrics.Label{Name: "outcome", Value: "ran"})
	r.Inc("maven_voice_turns_total", "Voice turns by outcome.", metrics.Label{Name: "outcome", Value: "no_match"})
	r.Observe("maven_mcp_reconcile_duration_seconds", "Reconcile time.", 1500*time.Millisecond, metrics.Label{Name: "server", Value: "a\"b\\c\nd"})
	var b strings.Builder
	err := r.WriteText(&b, []metrics.Sample{
		{Name: "maven_tools", Help: "Rows by state.", Labels: []metrics.Label{{Name: "state", Value: "enabled"}}, Value: 3},
		{Name: "maven_tools", Help: "Rows by state.", Labels: []metrics.Label{{Name: "state", Value: "proposed"}}, Value: 0},
	})
	if err != nil {
		t.Fatal(err)
	}
	want := `# HELP maven_mcp_reconcile_duration_seconds Reconcile time.
# TYPE maven_mcp_reconcile_duration_seconds summary
maven_mcp_reconcile_duration_seconds_sum{server="a\"b\\c\nd"} 1.5
maven_mcp_reconcile_duration_seconds_count{server="a\"b\\c\nd"} 1
# HELP maven_voice_turns_total Voice turns by outcome.
# TYPE maven_voice_turns_total counter
maven_voice_turns_total{outcome="no_match"} 1
maven_voice_turns_total{outcome="ran"} 2
# HELP maven_tools Rows by state.
# TYPE maven_tools gauge
maven_tools{state="enabled"} 3
maven_tools{state="proposed"} 0
`
	if b.String() != want {
		t.Fatalf("got\n%s\nwant\n%s", b.String(), want)
	}
}
