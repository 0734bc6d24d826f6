package bench

import (
	"context"
	"crypto/ecdh"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	webpush "github.com/SherClockHolmes/webpush-go"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/uptrace/bun"

	"maven/app/activity"
	"maven/app/allowlist"
	"maven/app/auth"
	"maven/app/auth/authtest"
	"maven/app/config"
	"maven/app/mcp"
	"maven/app/notify"
	"maven/app/pending"
	"maven/app/runner"
	"maven/db"
)

// Targets of the pending calls' figures (issue 21), each a ratio to its floor (issue 23). The
// issue's own goals were absolute (100 ms; the tool's run + 20 ms; 10 ms); on the 2-core
// machine they were first measured on, under a load of 12, these ratios stood at 4.4, 3.6 and
// 22, that is 2.4 ms, 4.0 ms and 7.4 ms.
const (
	// A pending call made → its push request at the push service ÷ a bare webpush-go send to the
	// same receiver: what Maven adds is one SQLite transaction (the identical call, the client's
	// count, the insert) and reading the subscriptions; the feed's event is written meanwhile.
	targetNoticeRatio = 5.0
	// The owner's approval → the waiting agent has the result ÷ the tool's own run (a direct
	// CallTool): the call and its row read again, two transitions written with their events, the
	// waiter woken and its read.
	targetApprovalRatio = 5.0
	// GET /approvals with 1,000 calls waiting ÷ GET /healthz of the same daemon: a session, 50
	// calls read and shown (the rest counted), the 20 recent ones and the notifications card.
	targetApprovalsPageRatio = 30.0
)

// pushReceiver is a push service on loopback (https, as a subscription's endpoint must be): it
// answers 201 to every push and says when each arrived.
type pushReceiver struct {
	srv     *httptest.Server
	arrived chan time.Time
}

func startPushReceiver(t *testing.T) *pushReceiver {
	r := &pushReceiver{arrived: make(chan time.Time, 16)}
	r.srv = httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		at := time.Now()
		_, _ = io.Copy(io.Discard, req.Body)
		w.WriteHeader(http.StatusCreated)
		r.arrived <- at
	}))
	t.Cleanup(r.srv.Close)
	return r
}

// next waits for the next push to arrive.
func (r *pushReceiver) next(t *testing.T) time.Time {
	t.Helper()
	select {
	case at := <-r.arrived:
		return at
	case <-time.After(30 * time.Second):
		t.Fatal("no push arrived within 30 s")
		return time.Time{}
	}
}

// browserKeys are a browser's subscription keys, base64url, as the Push API gives them.
func browserKeys(t *testing.T) (p256dh, secret string) {
	key, err := ecdh.P256().GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	auth := make([]byte, 16)
	rand.Read(auth)
	return base64.RawURLEncoding.EncodeToString(key.PublicKey().Bytes()), base64.RawURLEncoding.EncodeToString(auth)
}

// pendingWorld is the pending calls wired as the daemon wires them (real SQLite, the MCP
// manager on the scripted server, the runner, the notifiers with one browser subscribed at the
// loopback push service), with search_tasks enabled.
type pendingWorld struct {
	svc *pending.Service
	row allowlist.Tool
}

func startPendingWorld(t *testing.T, remote string, push *pushReceiver) pendingWorld {
	ctx := context.Background()
	bdb, err := db.Open(ctx, filepath.Join(t.TempDir(), "maven.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { bdb.Close() })
	logger := slog.New(slog.DiscardHandler)
	rows := allowlist.NewService(db.NewToolStore(bdb), time.Now)
	servers := map[string]config.Server{"tasks": {Name: "tasks", Type: config.TransportHTTP, URL: remote}}
	manager := mcp.NewManager(servers, mcp.NewToolReconciler(rows, time.Now, logger), mcp.ManagerOptions{Version: "bench"}, logger)
	mctx, cancel := context.WithCancel(ctx)
	manager.Run(mctx)
	var row allowlist.Tool
	waitFor(t, "search_tasks to be proposed", 30*time.Second, func() bool {
		list, _ := rows.List(ctx, allowlist.Filter{Scope: "mcp:tasks"})
		if len(list) == 1 {
			row = list[0]
		}
		return row.ID != 0
	})
	if row, err = rows.EnableTool(ctx, row.ID, authtest.Proof(t, auth.One(auth.ActionEnableTool, row.ID, row.ApprovalDigest()))); err != nil {
		t.Fatal(err)
	}
	feed := activity.New(db.NewActivityStore(bdb), time.Now)
	dispatcher, err := notify.New(ctx, db.NewPushStore(bdb), notify.Options{Origins: []string{"https://maven.example"},
		Transport: push.srv.Client().Transport, Activity: feed, Logger: logger})
	if err != nil {
		t.Fatal(err)
	}
	p256dh, secret := browserKeys(t)
	if _, err := dispatcher.Subscribe(ctx, push.srv.URL+"/push/bench", p256dh, secret, "bench"); err != nil {
		t.Fatal(err)
	}
	svc, err := pending.New(pending.Deps{Store: db.NewPendingStore(bdb), Rows: rows, Runner: runner.New(rows, manager, runner.Options{}),
		Lock: notLocked{}, Notifier: dispatcher, Activity: feed, Canonical: mcp.Canonicalize}, pending.Options{Logger: logger})
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() { defer close(done); svc.Run(mctx) }()
	t.Cleanup(func() { cancel(); <-done; svc.Close(); manager.Close() })
	return pendingWorld{svc: svc, row: row}
}

// submit makes the i-th pending call: its own arguments, so that none joins another.
func (w pendingWorld) submit(t *testing.T, i int) pending.Call {
	c, how, err := w.svc.Submit(context.Background(), pending.Request{Client: pending.Client{ID: "bench", Name: "bench"}, Row: w.row,
		Args: map[string]any{"query": fmt.Sprintf("milk %d", i)}, Why: "bench"})
	if err != nil || how != pending.Created {
		t.Fatalf("submit: %v %v", how, err)
	}
	return c
}

// settle waits for what the call's notice did, outside the timings, so no notice of one
// iteration overlaps the next.
func (w pendingWorld) settle(t *testing.T, c pending.Call) {
	if _, err := w.svc.AwaitNotified(context.Background(), c.ID, 30*time.Second); err != nil {
		t.Fatal(err)
	}
}

// benchNotice times, alternately, n times each: a pending call made until its push request
// arrives at the loopback push service, and a bare webpush-go send of a notice of the same size
// to the same receiver over the same kind of client.
func benchNotice(t *testing.T, w pendingWorld, push *pushReceiver, n int) (notice, bare []time.Duration) {
	ctx := context.Background()
	private, public, err := webpush.GenerateVAPIDKeys()
	if err != nil {
		t.Fatal(err)
	}
	p256dh, secret := browserKeys(t)
	sub := &webpush.Subscription{Endpoint: push.srv.URL + "/push/bare", Keys: webpush.Keys{Auth: secret, P256dh: p256dh}}
	client := &http.Client{Transport: push.srv.Client().Transport}
	payload, _ := json.Marshal(map[string]string{"title": "Maven: approval needed", "body": "tasks_search_tasks on tasks waits for your approval",
		"url": "https://maven.example/approvals/1"})
	made := 0
	viaMaven := func() time.Duration {
		start := time.Now()
		c := w.submit(t, made)
		made++
		took := push.next(t).Sub(start)
		w.settle(t, c)
		if _, err := w.svc.Deny(ctx, c.ID, "bench"); err != nil {
			t.Fatal(err)
		}
		return took
	}
	direct := func() time.Duration {
		start := time.Now()
		res, err := webpush.SendNotificationWithContext(ctx, payload, sub, &webpush.Options{HTTPClient: client,
			Subscriber: "https://maven.example", VAPIDPublicKey: public, VAPIDPrivateKey: private, TTL: 300, Urgency: webpush.UrgencyHigh})
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		return push.next(t).Sub(start)
	}
	for range 20 {
		viaMaven()
		direct()
	}
	for i := range n {
		if i%2 == 0 {
			notice, bare = append(notice, viaMaven()), append(bare, direct())
		} else {
			bare, notice = append(bare, direct()), append(notice, viaMaven())
		}
	}
	return notice, bare
}

// benchApproval times, alternately, n times each: the owner's Approve of a waiting call until
// the agent's Await has the result, and the tool's own run, a direct CallTool with the same
// arguments on the same server.
func benchApproval(t *testing.T, w pendingWorld, r *voiceRemote, push *pushReceiver, n int) (approval, tool []time.Duration) {
	ctx := context.Background()
	made := 0
	viaMaven := func() time.Duration {
		c := w.submit(t, 1_000_000+made)
		made++
		push.next(t)
		w.settle(t, c)
		proof := authtest.Proof(t, auth.One(auth.ActionApproveCall, c.ID, pending.Binding(c)))
		got := make(chan time.Time, 1)
		go func() {
			if c, err := w.svc.Await(ctx, c.ID, 30*time.Second); err == nil && c.State == pending.StateRan {
				got <- time.Now()
			}
			close(got)
		}()
		start := time.Now()
		if _, err := w.svc.Approve(ctx, c.ID, proof); err != nil {
			t.Fatal(err)
		}
		at, ok := <-got
		if !ok {
			t.Fatal("the waiting agent did not get the result")
		}
		return at.Sub(start)
	}
	direct := func() time.Duration {
		start := time.Now()
		res, err := r.direct.CallTool(ctx, &sdk.CallToolParams{Name: "search_tasks", Arguments: map[string]any{"query": fmt.Sprintf("milk %d", made)}})
		took := time.Since(start)
		if err != nil || res.IsError {
			t.Fatalf("direct CallTool: %v %+v", err, res)
		}
		return took
	}
	for range 20 {
		viaMaven()
		direct()
	}
	for i := range n {
		if i%2 == 0 {
			approval, tool = append(approval, viaMaven()), append(tool, direct())
		} else {
			tool, approval = append(tool, direct()), append(approval, viaMaven())
		}
	}
	return approval, tool
}

// seedPendingCalls writes one enabled local command and calls pending calls of it into a new
// database at data, five per client (the most a client may hold), expiring in an hour.
func seedPendingCalls(t *testing.T, data string, calls int) {
	ctx := context.Background()
	bdb := openDataDB(t, data)
	defer bdb.Close()
	rows := allowlist.NewService(db.NewToolStore(bdb), time.Now)
	var row allowlist.Tool
	err := rows.Update(ctx, func(tx *allowlist.Tx) (err error) {
		if row, _, err = tx.Propose(ctx, allowlist.Proposal{Name: "unlock_door", Cmd: []string{"/bin/echo", "unlocked"}, Scope: allowlist.ScopeLocal,
			Destructive: true, Source: allowlist.SourceCLI, Provenance: "bench", Actor: "bench"}); err != nil {
			return err
		}
		row, err = tx.Enable(ctx, row.ID, authtest.Proof(t, auth.One(auth.ActionEnableTool, row.ID, row.ApprovalDigest())))
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	store := db.NewPendingStore(bdb)
	now := time.Now()
	for i := range calls {
		c := &pending.Call{Client: pending.Client{ID: fmt.Sprintf("client-%d", i/5), Name: fmt.Sprintf("Client %d", i/5)},
			ToolID: row.ID, Tool: row.Name, Cmd: row.Cmd, Fingerprint: row.ApprovalDigest(), Args: json.RawMessage(fmt.Sprintf(`{"door":%d}`, i)),
			Why: "it can change things", Created: now, Expires: now.Add(time.Hour), State: pending.StatePending}
		if _, how, err := store.Submit(ctx, c, now, pending.DefaultMaxPerClient); err != nil || how != pending.Created {
			t.Fatalf("seed call %d: %v %v", i, how, err)
		}
	}
}

// openDataDB opens (and makes) the database of a daemon's data directory.
func openDataDB(t *testing.T, data string) *bun.DB {
	bdb, err := db.Open(context.Background(), filepath.Join(data, "maven.db"))
	if err != nil {
		t.Fatal(err)
	}
	return bdb
}

// benchApprovalsPage seeds 1,000 pending calls, starts the real daemon on them, signs in, and
// times, alternately, n times each: GET /approvals and GET /healthz.
func benchApprovalsPage(t *testing.T, bin string, n int) (page, health []time.Duration) {
	dir := t.TempDir()
	data := filepath.Join(dir, "data")
	if err := os.MkdirAll(data, 0o700); err != nil {
		t.Fatal(err)
	}
	seedPendingCalls(t, data, 1000)
	d := startDaemon(t, bin, data, writeFile(t, dir, "maven.json", []byte(`{}`)))
	b := newBrowser(t, d)
	b.register(authtest.New(d.Origin()), d.setupToken(t), false)
	client := &http.Client{Timeout: 30 * time.Second}
	get := func() time.Duration {
		start := time.Now()
		status, body := b.get("/approvals", false)
		took := time.Since(start)
		if status != http.StatusOK || strings.Count(string(body), `data-state="pending"`) != 50 || !strings.Contains(string(body), "and 950 more") {
			t.Fatalf("GET /approvals: %d, %d calls shown\n%.2000s", status, strings.Count(string(body), `data-state="pending"`), body)
		}
		return took
	}
	healthz := func() time.Duration { return d.healthz(t, client) }
	for range 10 {
		get()
		healthz()
	}
	for i := range n {
		if i%2 == 0 {
			page, health = append(page, get()), append(health, healthz())
		} else {
			health, page = append(health, healthz()), append(page, get())
		}
	}
	d.stop(t)
	return page, health
}

// reportApprovals adds the pending calls' figures: a notice's way to the push service, an
// approval's way to the waiting agent, and /approvals with 1,000 calls waiting.
func reportApprovals(t *testing.T, e *benchEnv, rep *report) {
	remote := startVoiceRemote(t, buildScripted(t, e.dir))
	push := startPushReceiver(t)
	w := startPendingWorld(t, remote.url, push)
	notice, bare := benchNotice(t, w, push, e.n(501))
	rep.versus("Pending call made → its push request at the push service", notice, bare, "bare webpush-go send to the same receiver", targetNoticeRatio)
	rep.raw("pending call made → push request arrived", notice)
	rep.raw("bare webpush-go send → arrived, beside it", bare)
	approval, tool := benchApproval(t, w, remote, push, e.n(501))
	rep.versus("Approval → the waiting agent has the result", approval, tool, "the tool's own run: direct `CallTool`", targetApprovalRatio)
	rep.raw("Approve → Await returned the result", approval)
	rep.raw("direct CallTool, beside it", tool)
	page, health := benchApprovalsPage(t, e.bin, e.n(501))
	rep.versus("`GET /approvals`, 1,000 calls waiting", page, health, "`GET /healthz`", targetApprovalsPageRatio)
	rep.raw("GET /approvals, 1,000 pending", page)
	rep.raw("GET /healthz, beside it", health)
}
