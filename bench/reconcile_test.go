package bench

import (
	"context"
	"database/sql"
	"fmt"
	"log/slog"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/uptrace/bun"

	"maven/app/activity"
	"maven/app/allowlist"
	"maven/app/mcp"
	"maven/db"
)

// reconcileServers is how many servers of 100 tools the reconcile figure discovers.
const reconcileServers = 100

// The reconcile's targets, ratios to its floor (issue 23): the first discovery of every tool
// within 3× of writing its rows and events bare, and an unchanged list within half of it.
const (
	targetReconcileRatio          = 3
	targetReconcileUnchangedRatio = 0.5
)

// reconcileTimes are the totals of one reconcile of servers × tools: all new, unchanged (the
// reconciler remembers the fingerprints), and unchanged after Forget (compared with the
// database).
type reconcileTimes struct {
	first, unchanged, forgotten time.Duration
}

// openBenchDB opens a new database in a directory of its own as the daemon opens it, with its
// upkeep (checkpoints as the passes write, the search index merged in the pauses between them).
// Close it before the next measurement: its upkeep works in the pauses. stopUpkeep stops the
// upkeep alone (closeDB does too).
func openBenchDB(t testing.TB) (bdb *bun.DB, stopUpkeep, closeDB func()) {
	t.Helper()
	ctx := context.Background()
	upkeep := db.NewUpkeep(slog.New(slog.DiscardHandler))
	bdb, err := db.Open(ctx, filepath.Join(t.TempDir(), "maven.db"), db.OnCommit(upkeep.Committed))
	if err != nil {
		t.Fatal(err)
	}
	runCtx, stop := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() { defer close(done); upkeep.Run(runCtx, bdb) }()
	var once sync.Once
	stopUpkeep = func() { once.Do(func() { stop(); <-done }) }
	return bdb, stopUpkeep, func() { stopUpkeep(); bdb.Close() }
}

// benchReconcile reconciles len(lists) servers × 100 tools into a new database, in-process,
// three passes, and returns their totals; then, if read is not nil, it is given the database.
func benchReconcile(t testing.TB, lists [][]*sdk.Tool, read func(*sql.DB)) reconcileTimes {
	ctx := context.Background()
	bdb, stopUpkeep, closeDB := openBenchDB(t)
	defer closeDB()
	svc := allowlist.NewService(db.NewToolStore(bdb), time.Now)
	rec := mcp.NewToolReconciler(svc, time.Now, slog.New(slog.DiscardHandler))
	pass := func() time.Duration {
		start := time.Now()
		for s, list := range lists {
			if err := rec.Reconcile(ctx, serverName(s), list); err != nil {
				t.Fatal(err)
			}
		}
		return time.Since(start)
	}
	want := len(lists) * 100
	var rt reconcileTimes
	rt.first = pass()
	counts, err := svc.CountByState(ctx, allowlist.Filter{})
	if err != nil || counts[allowlist.StateProposed] != want {
		t.Fatalf("after the first reconcile: %v %v", counts, err)
	}
	// The passes that follow stand for a refresh minutes later, when the upkeep is idle: it is
	// stopped, so that its merges of what the first pass wrote do not run beside them.
	stopUpkeep()
	before := svc.Version()
	rt.unchanged = pass()
	if v := svc.Version(); v != before {
		t.Fatalf("an unchanged reconcile opened a write transaction: version %d → %d", before, v)
	}
	for s := range lists {
		rec.Forget(serverName(s))
	}
	rt.forgotten = pass()
	after, err := svc.CountByState(ctx, allowlist.Filter{})
	if err != nil || after[allowlist.StateProposed] != want {
		t.Fatalf("after the pass that compared with the database: %v %v", after, err)
	}
	if read != nil {
		read(bdb.DB)
	}
	return rt
}

// floorWrites are what a first reconcile wrote, server by server: each tool row's columns and
// each audit event's, as stored, and the names of those columns (every column of tools and of
// tool_events but their ids).
type floorWrites struct {
	rows, events              [][][]any
	toolColumns, eventColumns []string
}

// columnsOf names the columns of table but id.
func columnsOf(t testing.TB, sdb *sql.DB, table string) []string {
	t.Helper()
	rows, err := sdb.Query("SELECT name FROM pragma_table_info(?) WHERE name != 'id' ORDER BY cid", table)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var names []string
	for rows.Next() {
		var name string
		if err := rows.Scan(&name); err != nil {
			t.Fatal(err)
		}
		names = append(names, name)
	}
	if err := rows.Err(); err != nil || len(names) == 0 {
		t.Fatalf("the columns of %s: %v %v", table, names, err)
	}
	return names
}

// readFloorWrites reads back, from a database a first reconcile wrote, the rows and events of
// each server, in the order of lists.
func readFloorWrites(t testing.TB, sdb *sql.DB, servers int) floorWrites {
	t.Helper()
	read := func(query string, arity int) map[string][][]any {
		rows, err := sdb.Query(query)
		if err != nil {
			t.Fatal(err)
		}
		defer rows.Close()
		out := map[string][][]any{}
		for rows.Next() {
			var scope string
			vals := make([]any, arity)
			ptrs := []any{&scope}
			for i := range vals {
				ptrs = append(ptrs, &vals[i])
			}
			if err := rows.Scan(ptrs...); err != nil {
				t.Fatal(err)
			}
			out[scope] = append(out[scope], vals)
		}
		if err := rows.Err(); err != nil {
			t.Fatal(err)
		}
		return out
	}
	w := floorWrites{toolColumns: columnsOf(t, sdb, "tools"), eventColumns: columnsOf(t, sdb, "tool_events")}
	tools := read("SELECT scope, "+strings.Join(w.toolColumns, ", ")+" FROM tools ORDER BY id", len(w.toolColumns))
	events := read("SELECT t.scope, e."+strings.Join(w.eventColumns, ", e.")+
		" FROM tool_events e JOIN tools t ON t.id = e.tool_id ORDER BY e.id", len(w.eventColumns))
	for s := range servers {
		scope := allowlist.MCPScope(serverName(s))
		if len(tools[scope]) != 100 || len(events[scope]) != 100 {
			t.Fatalf("%s: %d rows and %d events written; want 100 of each", scope, len(tools[scope]), len(events[scope]))
		}
		w.rows, w.events = append(w.rows, tools[scope]), append(w.events, events[scope])
	}
	return w
}

// benchReconcileFloor times the floor of a first reconcile: the same rows and events, of the
// same size, inserted with prepared statements into tables of the same columns and nothing
// else, one transaction per server as the reconcile commits one per server, in a database
// opened as the daemon opens it (db.Open: the same driver, DSN and pragmas).
func benchReconcileFloor(t testing.TB, w floorWrites) time.Duration {
	ctx := context.Background()
	bdb, _, closeDB := openBenchDB(t)
	defer closeDB()
	sdb := bdb.DB
	for _, stmt := range []string{
		"CREATE TABLE floor_tools (id INTEGER PRIMARY KEY, " + strings.Join(w.toolColumns, ", ") + ")",
		"CREATE TABLE floor_events (id INTEGER PRIMARY KEY, " + strings.Join(w.eventColumns, ", ") + ")",
	} {
		if _, err := sdb.ExecContext(ctx, stmt); err != nil {
			t.Fatal(err)
		}
	}
	prepare := func(table string, columns []string) *sql.Stmt {
		s, err := sdb.PrepareContext(ctx, fmt.Sprintf("INSERT INTO %s (%s) VALUES (?%s)", table, strings.Join(columns, ", "), strings.Repeat(", ?", len(columns)-1)))
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	insertTool, insertEvent := prepare("floor_tools", w.toolColumns), prepare("floor_events", w.eventColumns)
	defer insertTool.Close()
	defer insertEvent.Close()
	start := time.Now()
	for s := range w.rows {
		tx, err := sdb.BeginTx(ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		tools, events := tx.StmtContext(ctx, insertTool), tx.StmtContext(ctx, insertEvent)
		for _, args := range w.rows[s] {
			if _, err := tools.ExecContext(ctx, args...); err != nil {
				t.Fatal(err)
			}
		}
		for _, args := range w.events[s] {
			if _, err := events.ExecContext(ctx, args...); err != nil {
				t.Fatal(err)
			}
		}
		if err := tx.Commit(); err != nil {
			t.Fatal(err)
		}
	}
	return time.Since(start)
}

// discoveryLists are the tool lists of the figure's discovery: reconcileServers servers of 100
// tools each.
func discoveryLists() [][]*sdk.Tool {
	lists := make([][]*sdk.Tool, reconcileServers)
	for s := range lists {
		lists[s] = sdkTools(catalog(serverName(s), 100))
	}
	return lists
}

// reportReconcile adds the reconcile of 100 servers × 100 tools beside its floor, the two
// alternating, each in a new database, over several rounds.
func reportReconcile(t *testing.T, e *benchEnv, rep *report) {
	lists := discoveryLists()
	// A first reconcile gives the floor its writes (and warms both up).
	var w floorWrites
	benchReconcile(t, lists, func(sdb *sql.DB) { w = readFloorWrites(t, sdb, reconcileServers) })
	benchReconcileFloor(t, w)
	var first, unchanged, forgotten, floor []time.Duration
	for i := range e.n(9) {
		reconcile := func() {
			rt := benchReconcile(t, lists, nil)
			first, unchanged, forgotten = append(first, rt.first), append(unchanged, rt.unchanged), append(forgotten, rt.forgotten)
		}
		bare := func() { floor = append(floor, benchReconcileFloor(t, w)) }
		if i%2 == 0 {
			reconcile()
			bare()
		} else {
			bare()
			reconcile()
		}
	}
	floorWhat := "the same rows and events inserted bare"
	rep.versus(fmt.Sprintf("Reconcile %d servers × 100 tools, all new: total (median of %d)", reconcileServers, len(first)), first, floor, floorWhat, targetReconcileRatio)
	rep.versus("Reconcile, unchanged, fingerprints remembered: total", unchanged, floor, floorWhat, targetReconcileUnchangedRatio)
	rep.add("Reconcile, unchanged, compared with the database (after `Forget`): total",
		fmt.Sprintf("%s (%.2f× the floor)", ms(median(forgotten)), ratio(median(forgotten), median(floor))))
	rep.raw("reconcile, all new", first)
	rep.raw("reconcile, unchanged", unchanged)
	rep.raw("reconcile, after Forget", forgotten)
	rep.raw("reconcile's floor (rows and events inserted bare)", floor)
}

// BenchmarkReconcileAllNew is the first pass of the reconcile figure alone, each iteration into
// a new database, for profiling (go test -run '^$' -bench ReconcileAllNew -cpuprofile cpu.out
// ./bench). It reports the process's CPU time per pass too (cpu-ms/op), which a loaded machine
// moves less than the time the pass takes.
func BenchmarkReconcileAllNew(b *testing.B) {
	ctx := context.Background()
	lists := discoveryLists()
	var cpu time.Duration
	for b.Loop() {
		b.StopTimer()
		bdb, _, closeDB := openBenchDB(b)
		svc := allowlist.NewService(db.NewToolStore(bdb), time.Now)
		rec := mcp.NewToolReconciler(svc, time.Now, slog.New(slog.DiscardHandler))
		b.StartTimer()
		before := processCPU(b)
		for s, list := range lists {
			if err := rec.Reconcile(ctx, serverName(s), list); err != nil {
				b.Fatal(err)
			}
		}
		cpu += processCPU(b) - before
		b.StopTimer()
		closeDB()
		b.StartTimer()
	}
	b.ReportMetric(float64(cpu.Microseconds())/1000/float64(b.N), "cpu-ms/op")
}

// BenchmarkFeedCatchUp times the activity feed's copy of what a first discovery of 100 servers ×
// 100 tools appended, 10,000 events, which the upkeep makes once writes pause (or a read of the
// feed before it), in transactions of 2,000 events: the work the discovery no longer does.
func BenchmarkFeedCatchUp(b *testing.B) {
	ctx := context.Background()
	lists := discoveryLists()
	var cpu time.Duration
	for b.Loop() {
		b.StopTimer()
		bdb, stopUpkeep, closeDB := openBenchDB(b)
		stopUpkeep() // the copy is timed here, not in the upkeep's pause
		rec := mcp.NewToolReconciler(allowlist.NewService(db.NewToolStore(bdb), time.Now), time.Now, slog.New(slog.DiscardHandler))
		for s, list := range lists {
			if err := rec.Reconcile(ctx, serverName(s), list); err != nil {
				b.Fatal(err)
			}
		}
		b.StartTimer()
		before := processCPU(b)
		if _, err := db.NewActivityStore(bdb).ListActivity(ctx, activity.Filter{Limit: 1}); err != nil {
			b.Fatal(err)
		}
		cpu += processCPU(b) - before
		b.StopTimer()
		var n int
		if err := bdb.QueryRowContext(ctx, "SELECT count(event_id) FROM activity").Scan(&n); err != nil || n != reconcileServers*100 {
			b.Fatalf("%d events in the feed, %v; want %d", n, err, reconcileServers*100)
		}
		closeDB()
		b.StartTimer()
	}
	b.ReportMetric(float64(cpu.Microseconds())/1000/float64(b.N), "cpu-ms/op")
}

// processCPU is the CPU time this process has used, user and system.
func processCPU(tb testing.TB) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		tb.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// BenchmarkReconcileFloor is the reconcile's floor alone, for profiling beside
// BenchmarkReconcileAllNew.
func BenchmarkReconcileFloor(b *testing.B) {
	lists := discoveryLists()
	var w floorWrites
	benchReconcile(b, lists, func(sdb *sql.DB) { w = readFloorWrites(b, sdb, reconcileServers) })
	var total time.Duration
	for b.Loop() {
		total += benchReconcileFloor(b, w)
	}
	b.ReportMetric(float64(total.Milliseconds())/float64(b.N), "floor-ms/op")
}
