package pending

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"strconv"
	"sync"
	"time"

	"maven/app/activity"
	"maven/app/allowlist"
	"maven/app/notify"
	"maven/app/reveal"
	"maven/app/runner"
)

// Rows reads the allowlist (*allowlist.Service).
type Rows interface {
	// Get returns allowlist.ErrNotFound if no row has that id.
	Get(ctx context.Context, id int64) (allowlist.Tool, error)
	// Changed returns a channel closed after the next committed update.
	Changed() <-chan struct{}
}

// Runner runs a row through the one run path (*runner.Executor), which reads the row again in
// the step that runs it.
type Runner interface {
	Exec(ctx context.Context, row allowlist.Tool, args map[string]any) (runner.Result, error)
}

// Lock says whether the daemon is locked (*vault.Gate, or the daemon).
type Lock interface {
	Locked() bool
}

// Notifier tells the owner of a pending call (*notify.Dispatcher).
type Notifier interface {
	// Notify returns within the dispatcher's timeout what each notifier did.
	Notify(ctx context.Context, n notify.Notice) []notify.Delivery
	// Link is the absolute URL of path where a notice sends the owner.
	Link(path string) string
}

// Recorder appends to the activity feed (*activity.Log).
type Recorder interface {
	Append(ctx context.Context, events ...activity.Event) error
}

// Deps are what the service needs; all are required.
type Deps struct {
	Store    Store
	Rows     Rows
	Runner   Runner
	Lock     Lock
	Notifier Notifier
	Activity Recorder
	// Canonical is RFC 8785 (JCS), mcp.Canonicalize: app/mcp's own tests use db, which
	// implements this package's Store, so this package cannot import app/mcp.
	Canonical func(raw []byte) ([]byte, error)
}

// Defaults of Options (docs/design.md#config: agents.approval_ttl and agents.approval_wait).
const (
	DefaultTTL          = 5 * time.Minute
	DefaultWait         = 8 * time.Second
	DefaultMaxPerClient = 5
	// DefaultKeep is how many calls that reached a final state are kept, newest first, for the
	// page's recent calls.
	DefaultKeep = 200
)

// Options tune a Service; zero values take the defaults.
type Options struct {
	// TTL is how long a call waits for the owner before it expires (approval_ttl).
	TTL time.Duration
	// Wait is the longest an agent's request waits for the owner (approval_wait): Wait says it
	// to the callers, which wait with Await.
	Wait time.Duration
	// MaxPerClient is how many calls one client may have pending at once.
	MaxPerClient int
	Keep         int
	Now          func() time.Time
	Logger       *slog.Logger
}

// Service keeps the pending calls: it binds each to its client, row, fingerprint, arguments
// and expiry, tells the owner, runs an approved call once through the one run path, and voids,
// expires and interrupts calls as rules 30–31 say. It is safe for concurrent use.
type Service struct {
	d    Deps
	opts Options
	log  *slog.Logger
	kick chan struct{} // wakes Run: a new call may expire before the one it waits for

	mu      sync.Mutex
	watched map[int64]chan struct{} // closed at the next change of the call
	bg      sync.WaitGroup          // notices being sent
}

// New returns a Service over d; it fails when a dependency is missing.
func New(d Deps, opts Options) (*Service, error) {
	if d.Store == nil || d.Rows == nil || d.Runner == nil || d.Lock == nil || d.Notifier == nil || d.Activity == nil || d.Canonical == nil {
		return nil, errors.New("pending: Store, Rows, Runner, Lock, Notifier, Activity and Canonical are required")
	}
	if opts.TTL <= 0 {
		opts.TTL = DefaultTTL
	}
	if opts.Wait <= 0 {
		opts.Wait = DefaultWait
	}
	if opts.MaxPerClient <= 0 {
		opts.MaxPerClient = DefaultMaxPerClient
	}
	if opts.Keep <= 0 {
		opts.Keep = DefaultKeep
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	return &Service{d: d, opts: opts, log: opts.Logger, kick: make(chan struct{}, 1), watched: map[int64]chan struct{}{}}, nil
}

// Wait is how long an agent's request waits for the owner (approval_wait).
func (s *Service) Wait() time.Duration { return s.opts.Wait }

// Link is the absolute URL of a call's page, where its notice sends the owner.
func (s *Service) Link(id int64) string {
	return s.d.Notifier.Link("/approvals/" + strconv.FormatInt(id, 10))
}

// Close waits for the notices being sent; call it before the database closes.
func (s *Service) Close() { s.bg.Wait() }

// Get returns the call with that id, or ErrNotFound.
func (s *Service) Get(ctx context.Context, id int64) (Call, error) {
	return s.d.Store.Get(ctx, id)
}

// Listing is what /approvals, `maven approvals` and IPC show: the calls that wait (or run),
// oldest first, then the recent ones, latest first.
type Listing struct {
	Open []Call
	// MoreOpen counts the open calls beyond those in Open (Page's limit).
	MoreOpen int
	Recent   []Call
}

// recentShown is how many recent calls a listing holds.
const recentShown = 20

// List returns every open call and the recent ones.
func (s *Service) List(ctx context.Context) (Listing, error) {
	open, err := s.d.Store.Open(ctx)
	if err != nil {
		return Listing{}, err
	}
	return s.withRecent(ctx, Listing{Open: open})
}

// Page returns the first limit open calls, counting the rest, and the recent ones: what a page
// shows reads no more than it shows, however many calls wait.
func (s *Service) Page(ctx context.Context, limit int) (Listing, error) {
	open, total, err := s.d.Store.OpenFirst(ctx, limit)
	if err != nil {
		return Listing{}, err
	}
	return s.withRecent(ctx, Listing{Open: open, MoreOpen: total - len(open)})
}

func (s *Service) withRecent(ctx context.Context, l Listing) (Listing, error) {
	var err error
	l.Recent, err = s.d.Store.Recent(ctx, recentShown)
	return l, err
}

// Submit makes req a pending call (docs/design.md#rule-30): bound to its client, the row's id
// and fingerprint, the canonical arguments, the properties sent absent, and an expiry TTL from
// now. An identical call that ran and was not collected gives its result (Kept) and nothing
// runs again; one still waiting is joined (Joined); else a new call is stored (Created), the
// owner told through every notifier, and the creation recorded. A client holding MaxPerClient
// pending calls gets ErrTooMany.
func (s *Service) Submit(ctx context.Context, req Request) (Call, Submitted, error) {
	raw, err := json.Marshal(req.Args)
	if err != nil {
		return Call{}, 0, fmt.Errorf("pending: encode the arguments: %w", err)
	}
	canonical, err := s.d.Canonical(raw)
	if err != nil {
		return Call{}, 0, fmt.Errorf("pending: canonical arguments: %w", err)
	}
	now := s.opts.Now()
	c := &Call{Client: req.Client, ToolID: req.Row.ID, Tool: req.Row.Name, Cmd: req.Row.Cmd,
		Fingerprint: req.Row.ApprovalDigest(), Args: canonical, Absent: req.Absent, Why: req.Why,
		Created: now, Expires: now.Add(s.opts.TTL), State: StatePending}
	got, how, err := s.d.Store.Submit(ctx, c, now, s.opts.MaxPerClient)
	if err != nil {
		return Call{}, 0, err
	}
	if how == Created {
		// The owner is told first: the feed's write need not delay the notice.
		s.bg.Go(func() { s.notify(got) })
		s.record(ctx, got, EventCreated, "", map[string]any{"expires": got.Expires.UTC().Format(time.RFC3339), "reason": got.Why})
		select {
		case s.kick <- struct{}{}:
		default:
		}
	}
	return got, how, nil
}

// notify tells the owner of c and keeps what each notifier did with the call.
func (s *Service) notify(c Call) {
	ctx := context.Background()
	deliveries := s.d.Notifier.Notify(ctx, notify.Notice{Tool: c.Tool, Server: c.Server(), Client: c.Client.Name, Link: s.Link(c.ID)})
	if err := s.d.Store.SetDeliveries(ctx, c.ID, deliveries); err != nil {
		s.log.Error("pending: keep a call's deliveries", "call", c.ID, "err", err)
	}
	s.changed(c.ID)
}

// Await waits at most wait for the call to reach a final state (ctx may end the wait sooner)
// and returns it as it is then: ran with its result, or still pending or running.
func (s *Service) Await(ctx context.Context, id int64, wait time.Duration) (Call, error) {
	return s.await(ctx, id, wait, func(c Call) bool { return c.State.Final() })
}

// AwaitNotified waits at most wait for what the notifiers did with the call's notice, and
// returns the call as it is then.
func (s *Service) AwaitNotified(ctx context.Context, id int64, wait time.Duration) (Call, error) {
	return s.await(ctx, id, wait, func(c Call) bool { return c.Deliveries != nil || c.State.Final() })
}

func (s *Service) await(ctx context.Context, id int64, wait time.Duration, done func(Call) bool) (Call, error) {
	timer := time.NewTimer(wait)
	defer timer.Stop()
	for {
		changed := s.watch(id)
		c, err := s.d.Store.Get(ctx, id)
		if err != nil {
			return Call{}, err
		}
		if c.State == StatePending && !s.opts.Now().Before(c.Expires) {
			c = s.expire(ctx, c)
		}
		if done(c) {
			return c, nil
		}
		select {
		case <-changed:
		case <-timer.C:
			return c, nil
		case <-ctx.Done():
			return c, ctx.Err()
		}
	}
}

// Collect marks a ran call's result as given to its caller: an identical call after this asks
// the owner again. It reports whether this caller was the first.
func (s *Service) Collect(ctx context.Context, id int64) (bool, error) {
	return s.d.Store.Collect(ctx, id)
}

// watch returns a channel closed at the next change of the call.
func (s *Service) watch(id int64) <-chan struct{} {
	s.mu.Lock()
	defer s.mu.Unlock()
	ch := s.watched[id]
	if ch == nil {
		ch = make(chan struct{})
		s.watched[id] = ch
	}
	return ch
}

// changed wakes those waiting on the call.
func (s *Service) changed(id int64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if ch := s.watched[id]; ch != nil {
		close(ch)
		delete(s.watched, id)
	}
}

// transition moves a call as Store.Transition does, wakes its waiters and records the event; a
// conflict returns the call as it is now in a *NotPendingError.
func (s *Service) transition(ctx context.Context, c Call, from []State, ch Change, ev Event, detail map[string]any) (Call, error) {
	got, err := s.d.Store.Transition(ctx, c.ID, from, ch)
	if errors.Is(err, ErrConflict) {
		now, gerr := s.d.Store.Get(ctx, c.ID)
		if gerr != nil {
			return c, gerr
		}
		return now, &NotPendingError{Call: now}
	}
	if err != nil {
		return c, err
	}
	s.changed(c.ID)
	if ev != "" {
		s.record(ctx, got, ev, ch.Reason, detail)
	}
	return got, nil
}

// expire marks a pending call past its expiry expired: expiry denies (docs/design.md#rule-31).
// It returns the call as it is after, whoever won.
func (s *Service) expire(ctx context.Context, c Call) Call {
	now := s.opts.Now()
	got, err := s.transition(ctx, c, []State{StatePending}, Change{State: StateExpired, Finished: now, DueAt: now,
		Reason: "no one approved it in time"}, EventExpired, nil)
	var np *NotPendingError
	switch {
	case errors.As(err, &np):
		return np.Call
	case err != nil:
		s.log.Error("pending: expire a call", "call", c.ID, "err", err)
		return c
	}
	return got
}

// recordTimeout bounds writing one event to the activity feed.
const recordTimeout = 5 * time.Second

// record appends a call's event to the activity feed with its client's name, its arguments
// (cut) and why.
func (s *Service) record(ctx context.Context, c Call, ev Event, reason string, more map[string]any) {
	detail := map[string]any{"client": c.Client.Name, "client_id": c.Client.ID, "call": c.ID, "server": c.Server(), "reason": reason}
	if args := argsDetail(c.Args); len(args) > 0 {
		detail["args"] = args
	}
	if c.DecidedBy != "" && (ev == EventApproved || ev == EventDenied) {
		detail["by"] = c.DecidedBy
	}
	for k, v := range more {
		detail[k] = v
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), recordTimeout)
	defer cancel()
	err := s.d.Activity.Append(ctx, activity.Event{At: s.opts.Now(), Actor: actor(c, ev), Action: activity.ActionApproval,
		Outcome: string(ev), ToolID: c.ToolID, Tool: c.Tool, Detail: detail})
	if err != nil {
		s.log.Error("pending: record a call's event", "call", c.ID, "event", ev, "err", err)
	}
}

// actor is who did what an event records: the client asked, the owner decided, Maven did the
// rest.
func actor(c Call, ev Event) string {
	switch ev {
	case EventCreated:
		if c.Client == Voice {
			return "voice"
		}
		return "agent"
	case EventApproved, EventDenied:
		return "owner"
	}
	return "system"
}

// Bounds of what the feed keeps of a call's arguments, as for an agent's call.
const (
	maxArgsKept = 20
	maxArgValue = 200
)

// argsDetail is the canonical arguments as the feed keeps them: each value as text, cut.
func argsDetail(raw json.RawMessage) map[string]any {
	var m map[string]json.RawMessage
	if json.Unmarshal(raw, &m) != nil || len(m) == 0 {
		return nil
	}
	out := map[string]any{}
	for _, k := range slices.Sorted(maps.Keys(m)) {
		v := m[k]
		if len(out) == maxArgsKept {
			out["…"] = fmt.Sprintf("%d more", len(m)-maxArgsKept)
			break
		}
		text := string(v)
		var str string
		if json.Unmarshal(v, &str) == nil {
			text = str
		}
		key, _ := reveal.Cut(k, 64, "…")
		out[key], _ = reveal.Cut(text, maxArgValue, "…")
	}
	return out
}
