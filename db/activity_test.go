package db_test

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/uptrace/bun"

	"maven/app/activity"
	"maven/db"
)

// queries keeps the SQL of every query bun runs.
type queries struct {
	mu  sync.Mutex
	sql []string
}

func (q *queries) BeforeQuery(ctx context.Context, e *bun.QueryEvent) context.Context {
	q.mu.Lock()
	q.sql = append(q.sql, e.Query)
	q.mu.Unlock()
	return ctx
}

func (q *queries) AfterQuery(context.Context, *bun.QueryEvent) {}

// TestFeedFiltersReadAnIndex: each filter of the feed is read through its index, in time order,
// the outcome one through an index that holds only the entries with an outcome (a discovery's
// thousands of row events have none, and write nothing to it).
func TestFeedFiltersReadAnIndex(t *testing.T) {
	ctx := context.Background()
	bdb := newDB(t)
	seen := &queries{}
	bdb.AddQueryHook(seen)
	feed := db.NewActivityStore(bdb)
	now := time.Now()
	if err := feed.AppendActivity(ctx, []*activity.Entry{
		{At: now, Actor: "voice", Action: activity.ActionVoiceTurn, Tool: "calc_add", Outcome: "ran"},
		{At: now, Actor: "owner", Action: "locked"},
	}); err != nil {
		t.Fatal(err)
	}
	for filter, index := range map[activity.Filter]string{
		{Limit: 10, Outcome: "ran"}:     "activity_outcome_at",
		{Limit: 10, Tool: "calc_add"}:   "activity_tool_at",
		{Limit: 10, Action: "locked"}:   "activity_action_at",
		{Limit: 10, Since: now.Add(-1)}: "activity_at",
	} {
		seen.mu.Lock()
		seen.sql = nil
		seen.mu.Unlock()
		got, err := feed.ListActivity(ctx, filter)
		if err != nil || len(got) == 0 {
			t.Fatalf("%+v: %d entries, %v", filter, len(got), err)
		}
		seen.mu.Lock()
		query := seen.sql[len(seen.sql)-1]
		seen.mu.Unlock()
		rows, err := bdb.QueryContext(ctx, "EXPLAIN QUERY PLAN "+query)
		if err != nil {
			t.Fatal(err)
		}
		var plan []string
		for rows.Next() {
			var id, parent, unused int
			var detail string
			if err := rows.Scan(&id, &parent, &unused, &detail); err != nil {
				t.Fatal(err)
			}
			plan = append(plan, detail)
		}
		rows.Close()
		if p := strings.Join(plan, "\n"); !strings.Contains(p, "USING INDEX "+index) && !strings.Contains(p, "USING COVERING INDEX "+index) {
			t.Errorf("%+v is not read through %s:\n%s", filter, index, p)
		}
	}
}
