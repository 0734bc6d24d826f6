package mcp

// Crash safety (issue 7): a process reconciling 1,000 tools is killed with SIGKILL in the middle,
// several times, at different moments. After each kill the database opens, every row is in a
// legal state, each refresh is all there or not at all, and the event log replays to the rows.

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"maven/app/allowlist"
	"maven/app/auth"
	"maven/app/auth/authtest"
	"maven/db"
)

const (
	crashDBEnv    = "MAVEN_CRASH_DB"
	crashNonceEnv = "MAVEN_CRASH_NONCE"
	crashToolsEnv = "MAVEN_CRASH_TOOLS"
	crashServer   = "bulk"
)

// bulkTools is a list of n tools; every version describes each of them differently, so
// reconciling a new version redefines all of them.
func bulkTools(n int, version string) []*sdk.Tool {
	tools := make([]*sdk.Tool, n)
	for i := range tools {
		tools[i] = &sdk.Tool{
			Name:        fmt.Sprintf("tool_%04d", i),
			Description: fmt.Sprintf("Tool %d, version %s", i, version),
			InputSchema: map[string]any{"type": "object"},
			Annotations: &sdk.ToolAnnotations{ReadOnlyHint: i%2 == 0},
		}
	}
	return tools
}

// signallingStore calls onWrite after every row written inside a transaction, so the child can
// tell the parent that a transaction is half done.
type signallingStore struct {
	allowlist.Store
	onWrite func()
}

func (s signallingStore) Update(ctx context.Context, fn func(allowlist.TxStore) error) error {
	return s.Store.Update(ctx, func(tx allowlist.TxStore) error {
		return fn(signallingTx{TxStore: tx, onWrite: s.onWrite})
	})
}

type signallingTx struct {
	allowlist.TxStore
	onWrite func()
}

func (t signallingTx) InsertTools(ctx context.Context, tools []*allowlist.Tool) error {
	err := t.TxStore.InsertTools(ctx, tools)
	for range tools {
		t.onWrite()
	}
	return err
}

func (t signallingTx) UpdateTool(ctx context.Context, tool *allowlist.Tool) error {
	err := t.TxStore.UpdateTool(ctx, tool)
	t.onWrite()
	return err
}

// runCrashChild reconciles new versions of bulkTools into the database for ever, printing
// "started", then "mid-tx K" halfway through the K-th reconcile's transaction and "done K µs"
// after it. The parent kills it.
func runCrashChild() int {
	ctx := context.Background()
	n, err := strconv.Atoi(os.Getenv(crashToolsEnv))
	if err != nil {
		fmt.Fprintln(os.Stderr, "crash child:", err)
		return 1
	}
	bdb, err := db.Open(ctx, os.Getenv(crashDBEnv))
	if err != nil {
		fmt.Fprintln(os.Stderr, "crash child:", err)
		return 1
	}
	k, writes := 0, 0
	store := signallingStore{Store: db.NewToolStore(bdb), onWrite: func() {
		writes++
		if writes == n/2 {
			fmt.Printf("mid-tx %d\n", k)
		}
	}}
	svc := allowlist.NewService(store, time.Now)
	rec := NewToolReconciler(svc, time.Now, slog.New(slog.DiscardHandler))
	nonce := os.Getenv(crashNonceEnv)
	fmt.Println("started")
	for ; ; k++ {
		writes = 0
		start := time.Now()
		if err := rec.Reconcile(ctx, crashServer, bulkTools(n, fmt.Sprintf("%s.%d", nonce, k))); err != nil {
			fmt.Fprintln(os.Stderr, "crash child:", err)
			return 1
		}
		fmt.Printf("done %d %d\n", k, time.Since(start).Microseconds())
	}
}

// crashSummary is what checkCrashDB found.
type crashSummary struct {
	rows, enabled, events int
	version               string // the version all bulk rows describe, "" with no rows
	redefinitions         int    // redefined events per row
}

// checkCrashDB opens the database as a restarted daemon would and checks it: integrity, legal
// states, atomic refreshes, and an event log that replays to the rows.
func checkCrashDB(t *testing.T, path string, tools int) crashSummary {
	t.Helper()
	ctx := context.Background()
	bdb, err := db.Open(ctx, path)
	if err != nil {
		t.Fatalf("the database does not open after the kill: %v", err)
	}
	defer bdb.Close()
	var integrity string
	if err := bdb.QueryRowContext(ctx, "PRAGMA integrity_check").Scan(&integrity); err != nil || integrity != "ok" {
		t.Fatalf("integrity_check = %q, %v", integrity, err)
	}
	svc := allowlist.NewService(db.NewToolStore(bdb), time.Now)
	rows, err := svc.List(ctx, allowlist.Filter{})
	if err != nil {
		t.Fatal(err)
	}
	events, err := svc.Events(ctx, 0)
	if err != nil {
		t.Fatal(err)
	}
	sum := crashSummary{rows: len(rows), events: len(events)}
	if len(rows) != 0 && len(rows) != tools {
		t.Errorf("%d rows: a reconcile of %d new tools was cut in half", len(rows), tools)
	}

	byTool := map[int64][]allowlist.Event{}
	created := 0
	for _, ev := range events {
		byTool[ev.ToolID] = append(byTool[ev.ToolID], ev)
		if ev.Action == "proposed" {
			created++
		}
	}
	if created != len(rows) {
		t.Errorf("%d creation events for %d rows", created, len(rows))
	}
	versions := map[string]int{}
	redefs := map[int]int{}
	for _, r := range rows {
		switch r.State {
		case allowlist.StateProposed, allowlist.StateEnabled, allowlist.StateDisabled, allowlist.StateWithdrawn:
		default:
			t.Errorf("row %d is in the illegal state %q", r.ID, r.State)
		}
		if r.State == allowlist.StateEnabled {
			sum.enabled++
		}
		_, v, _ := strings.Cut(r.Description, ", version ")
		versions[v]++

		// Replay the row's events: the state they end in, and the fingerprint of the last
		// redefinition, must be the row's.
		evs := byTool[r.ID]
		if len(evs) == 0 || evs[0].Action != "proposed" {
			t.Errorf("row %d: its first event is not its creation: %+v", r.ID, evs)
			continue
		}
		var state allowlist.State
		fingerprint := ""
		n := 0
		for _, ev := range evs {
			var d struct {
				State       allowlist.State `json:"state"`
				To          allowlist.State `json:"to"`
				Fingerprint string          `json:"fingerprint"`
			}
			if err := json.Unmarshal(ev.Detail, &d); err != nil {
				t.Errorf("row %d: event %d detail %s: %v", r.ID, ev.ID, ev.Detail, err)
			}
			switch {
			case ev.Action == "proposed":
				state = d.State
			case d.To != "":
				state = d.To
			}
			if ev.Action == "redefined" {
				fingerprint = d.Fingerprint
				n++
			}
			if ev.Repeats > 0 {
				// Redefinitions that followed this one, counted against it (issue 10).
				if err := json.Unmarshal(ev.LastRepeatDetail, &d); err != nil {
					t.Errorf("row %d: event %d last repeat %s: %v", r.ID, ev.ID, ev.LastRepeatDetail, err)
				}
				fingerprint = d.Fingerprint
				n += ev.Repeats
			}
		}
		if state != r.State {
			t.Errorf("row %d is %s, its events say %s", r.ID, r.State, state)
		}
		if n > 0 && fingerprint != r.Fingerprint {
			t.Errorf("row %d has fingerprint %s, its last redefinition says %s", r.ID, r.Fingerprint, fingerprint)
		}
		redefs[n]++
	}
	if len(versions) > 1 {
		t.Errorf("the rows describe %d versions at once: a redefinition was cut in half: %v", len(versions), versions)
	}
	for v := range versions {
		sum.version = v
	}
	if len(redefs) > 1 {
		t.Errorf("rows were redefined different numbers of times: %v", redefs)
	}
	for n := range redefs {
		sum.redefinitions = n
	}
	return sum
}

func TestCrashDuringReconcile(t *testing.T) {
	tools := 1000
	path := filepath.Join(t.TempDir(), "maven.db")
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	plans := []struct {
		what   string
		killAt string // the line after which the child is killed; "" for a random moment
	}{
		{"halfway through the first reconcile, all tools new", "mid-tx 0"},
		{"halfway through the second reconcile, all tools redefined", "mid-tx 1"},
		{"halfway through a redefinition that sends enabled rows back to proposed", "mid-tx 0"},
		{"halfway through a second redefinition, after one committed", "mid-tx 1"},
		{"at a random moment", ""},
		{"at a random moment", ""},
	}
	if testing.Short() {
		// Under the race detector a reconcile of 1,000 tools takes seconds.
		tools, plans = 200, plans[:3]
	}
	reconcileTime := 500 * time.Millisecond // until the child reports how long one takes
	var enabledIDs []int64
	for i, p := range plans {
		cmd := exec.Command(exe)
		cmd.Env = append(os.Environ(), helperEnv+"=crash-reconcile", crashDBEnv+"="+path,
			crashNonceEnv+"="+strconv.Itoa(i), crashToolsEnv+"="+strconv.Itoa(tools))
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		out, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		var killOnce sync.Once
		var killedAfter time.Duration
		var started time.Time
		kill := func() {
			killOnce.Do(func() {
				killedAfter = time.Since(started)
				cmd.Process.Signal(syscall.SIGKILL)
			})
		}
		// Killed anyway if it never gets to its moment.
		watchdog := time.AfterFunc(60*time.Second, kill)
		var lines []string
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			line := sc.Text()
			lines = append(lines, line)
			switch {
			case line == "started":
				started = time.Now()
				if p.killAt == "" {
					// Anywhere from before the first write to after a commit or two.
					time.AfterFunc(rand.N(3*reconcileTime), kill)
				}
			case line == p.killAt:
				kill()
			case strings.HasPrefix(line, "done "):
				var k int
				var us int64
				if _, err := fmt.Sscanf(line, "done %d %d", &k, &us); err == nil {
					reconcileTime = time.Duration(us) * time.Microsecond
				}
			}
		}
		err = cmd.Wait()
		watchdog.Stop()
		ws, _ := cmd.ProcessState.Sys().(syscall.WaitStatus)
		if !ws.Signaled() || ws.Signal() != syscall.SIGKILL {
			t.Fatalf("kill %d: the child ended with %v, not by SIGKILL; stdout %q; stderr:\n%s", i+1, err, lines, stderr.String())
		}

		sum := checkCrashDB(t, path, tools)
		t.Logf("kill %d %s: after %s (a reconcile takes ≈%s); child said %q; then %d rows (%d enabled), %d events, %d redefinitions each, version %q",
			i+1, p.what, killedAfter.Round(time.Millisecond), reconcileTime.Round(time.Millisecond), lines,
			sum.rows, sum.enabled, sum.events, sum.redefinitions, sum.version)
		switch i {
		case 0:
			if sum.rows != 0 || sum.events != 0 {
				t.Errorf("a reconcile killed halfway left %d rows and %d events", sum.rows, sum.events)
			}
		case 1:
			if sum.rows != tools || sum.redefinitions != 0 || sum.version != "1.0" {
				t.Errorf("want the first reconcile of run 2 and none of its second: %+v", sum)
			}
			// The owner enables ten rows; the next redefinition must move all ten or none.
			enabledIDs = enableSome(t, path, 10)
		case 2:
			if sum.enabled != len(enabledIDs) || sum.version != "1.0" {
				t.Errorf("a redefinition killed halfway left %d of %d rows enabled, version %q", sum.enabled, len(enabledIDs), sum.version)
			}
		case 3:
			// The committed redefinition moved every enabled row back to proposed; the one
			// killed halfway left no trace.
			if sum.enabled != 0 || sum.redefinitions != 1 || sum.version != "3.0" {
				t.Errorf("want exactly the first redefinition of run 4: %+v", sum)
			}
		}
	}

	// The restarted daemon reconciles normally.
	ctx := context.Background()
	bdb, err := db.Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	svc := allowlist.NewService(db.NewToolStore(bdb), time.Now)
	rec := NewToolReconciler(svc, time.Now, slog.New(slog.DiscardHandler))
	start := time.Now()
	if err := rec.Reconcile(ctx, crashServer, bulkTools(tools, "final")); err != nil {
		t.Fatal(err)
	}
	t.Logf("reconcile of %d redefined tools after the kills: %s", tools, time.Since(start).Round(time.Millisecond))
	for _, id := range enabledIDs {
		row, err := svc.Get(ctx, id)
		if err != nil || row.State != allowlist.StateProposed || row.PreviousDeclared == "" {
			t.Errorf("enabled row %d after its redefinition: %s, previous declared %q, %v", id, row.State, row.PreviousDeclared, err)
		}
	}
	bdb.Close()
	if sum := checkCrashDB(t, path, tools); sum.rows != tools || sum.version != "final" || sum.enabled != 0 {
		t.Errorf("after the final reconcile: %+v", sum)
	}
}

// enableSome enables the first n bulk rows, as the owner would on /tools.
func enableSome(t *testing.T, path string, n int) []int64 {
	t.Helper()
	ctx := context.Background()
	bdb, err := db.Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	defer bdb.Close()
	svc := allowlist.NewService(db.NewToolStore(bdb), time.Now)
	rows, err := svc.List(ctx, allowlist.Filter{Scope: allowlist.MCPScope(crashServer), Limit: n})
	if err != nil {
		t.Fatal(err)
	}
	var ids []int64
	for _, r := range rows {
		if _, err := svc.EnableTool(ctx, r.ID, authtest.Proof(t, auth.One(auth.ActionEnableTool, r.ID, r.ApprovalDigest()))); err != nil {
			t.Fatal(err)
		}
		ids = append(ids, r.ID)
	}
	return ids
}
