// Package metrics counts what the daemon does and writes it in the Prometheus text format. It
// is deliberately small: counters and duration summaries kept in memory, plus gauges read at
// scrape time from whoever owns the state.
package metrics

import (
	"bufio"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Label is one name="value" pair.
type Label struct{ Name, Value string }

// Sample is one gauge value read at scrape time.
type Sample struct {
	Name   string
	Help   string
	Labels []Label
	Value  float64
}

// Registry holds counters and summaries. It is safe for concurrent use.
type Registry struct {
	mu     sync.Mutex
	series map[string]*family
}

type family struct {
	kind   string // "counter" or "summary"
	help   string
	values map[string]*value // by rendered label set
}

type value struct {
	labels string
	count  float64
	sum    float64 // summaries only
}

// New returns an empty registry.
func New() *Registry { return &Registry{series: map[string]*family{}} }

// Inc adds one to a counter.
func (r *Registry) Inc(name, help string, labels ...Label) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.value("counter", name, help, labels).count++
}

// Observe records one duration in a summary (its _sum in seconds and its _count).
func (r *Registry) Observe(name, help string, d time.Duration, labels ...Label) {
	r.mu.Lock()
	defer r.mu.Unlock()
	v := r.value("summary", name, help, labels)
	v.count++
	v.sum += d.Seconds()
}

func (r *Registry) value(kind, name, help string, labels []Label) *value {
	f := r.series[name]
	if f == nil {
		f = &family{kind: kind, help: help, values: map[string]*value{}}
		r.series[name] = f
	}
	key := renderLabels(labels)
	v := f.values[key]
	if v == nil {
		v = &value{labels: key}
		f.values[key] = v
	}
	return v
}

// WriteText writes every series and the gauges in the Prometheus text exposition format,
// sorted so that scrapes are stable.
func (r *Registry) WriteText(w io.Writer, gauges []Sample) error {
	bw := bufio.NewWriter(w)
	r.mu.Lock()
	names := make([]string, 0, len(r.series))
	for n := range r.series {
		names = append(names, n)
	}
	slices.Sort(names)
	for _, n := range names {
		f := r.series[n]
		fmt.Fprintf(bw, "# HELP %s %s\n# TYPE %s %s\n", n, escapeHelp(f.help), n, f.kind)
		keys := make([]string, 0, len(f.values))
		for k := range f.values {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		for _, k := range keys {
			v := f.values[k]
			if f.kind == "summary" {
				fmt.Fprintf(bw, "%s_sum%s %s\n%s_count%s %s\n", n, k, num(v.sum), n, k, num(v.count))
				continue
			}
			fmt.Fprintf(bw, "%s%s %s\n", n, k, num(v.count))
		}
	}
	r.mu.Unlock()

	seen := map[string]bool{}
	for _, g := range gauges {
		if !seen[g.Name] {
			seen[g.Name] = true
			fmt.Fprintf(bw, "# HELP %s %s\n# TYPE %s gauge\n", g.Name, escapeHelp(g.Help), g.Name)
		}
		fmt.Fprintf(bw, "%s%s %s\n", g.Name, renderLabels(g.Labels), num(g.Value))
	}
	return bw.Flush()
}

func renderLabels(labels []Label) string {
	if len(labels) == 0 {
		return ""
	}
	var b strings.Builder
	b.WriteByte('{')
	for i, l := range labels {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(l.Name)
		b.WriteString(`="`)
		b.WriteString(escapeValue(l.Value))
		b.WriteByte('"')
	}
	b.WriteByte('}')
	return b.String()
}

// escapeValue escapes a label value as the format requires; server and tool names are chosen
// by others and must not break a scrape.
func escapeValue(s string) string {
	return strings.NewReplacer(`\`, `\\`, `"`, `\"`, "\n", `\n`).Replace(s)
}

func escapeHelp(s string) string {
	return strings.NewReplacer(`\`, `\\`, "\n", `\n`).Replace(s)
}

func num(f float64) string { return strconv.FormatFloat(f, 'g', -1, 64) }
