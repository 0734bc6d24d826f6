package handlers

import (
	"container/list"
	"fmt"
	"net/http"
	"net/netip"
	"sync"
	"time"

	"golang.org/x/time/rate"
)

// How much anonymous traffic is let through. Beginning a ceremony costs a little memory (auth
// bounds it too); trying a recovery code costs an Argon2id run (64 MiB, three passes).
var (
	// A source may begin a few sign-ins, unlocks or setups at once, then one every 30 s: it
	// then holds at most a dozen of the ceremonies (each lives up to 3 minutes), so filling
	// auth's anonymous share of 1,024 takes some 86 addresses (IPv6: /64s) at once.
	ceremonyBudget = budget{every: 30 * time.Second, burst: 6}
	// A source may try a few recovery codes at once (typos happen), then one every 30 s.
	recoveryBudget = budget{every: 30 * time.Second, burst: 5}
	// All sources together try at most one recovery code every 2 s (a few at once): that bounds
	// the Argon2id work anyone can cause, while a stranger alone can spend only their own share.
	recoveryTotal = budget{every: 2 * time.Second, burst: 5}
)

// maxSources bounds each table of per-source buckets.
const maxSources = 4096

// budget is the shape of a token bucket: burst at once, then one every every.
type budget struct {
	every time.Duration
	burst int
}

func (b budget) limiter() *rate.Limiter { return rate.NewLimiter(rate.Every(b.every), b.burst) }

// rateLimited refuses a request beyond its budget, saying when the next one will be let through.
type rateLimited struct{ wait time.Duration }

func (e rateLimited) Error() string { return fmt.Sprintf("rate limited for %s", e.wait) }

// take spends one token of l at now, or returns how long until one is there (nothing spent).
func take(l *rate.Limiter, now time.Time) error {
	res := l.ReserveN(now, 1)
	if !res.OK() {
		return rateLimited{time.Minute}
	}
	if wait := res.DelayFrom(now); wait > 0 {
		res.CancelAt(now)
		return rateLimited{wait}
	}
	return nil
}

// sourceLimits is a token bucket per source of requests (golang.org/x/time/rate). The table
// holds at most size sources: when it is full, the source seen least recently is forgotten. That
// source starts afresh if it comes back, so an attacker who cycles through addresses gains
// nothing they could not have by using a new address anyway, and the table never grows.
type sourceLimits struct {
	budget budget
	size   int
	now    func() time.Time

	mu      sync.Mutex
	sources map[netip.Prefix]*list.Element // of *sourceBucket
	recent  *list.List                     // most recently seen first
}

type sourceBucket struct {
	source netip.Prefix
	lim    *rate.Limiter
}

func newSourceLimits(b budget, size int, now func() time.Time) *sourceLimits {
	return &sourceLimits{budget: b, size: size, now: now, sources: map[netip.Prefix]*list.Element{}, recent: list.New()}
}

// take spends one token of the bucket of r's source; see take.
func (l *sourceLimits) take(r *http.Request) error {
	src := sourceOf(r)
	l.mu.Lock()
	defer l.mu.Unlock()
	e, ok := l.sources[src]
	if ok {
		l.recent.MoveToFront(e)
	} else {
		if l.recent.Len() >= l.size {
			oldest := l.recent.Back()
			delete(l.sources, oldest.Value.(*sourceBucket).source)
			l.recent.Remove(oldest)
		}
		e = l.recent.PushFront(&sourceBucket{source: src, lim: l.budget.limiter()})
		l.sources[src] = e
	}
	return take(e.Value.(*sourceBucket).lim, l.now())
}

// len is the number of sources in the table.
func (l *sourceLimits) len() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.recent.Len()
}

// sourceOf is what a request is counted against: its peer's address (the client's, when a
// trusted proxy forwarded it), an IPv6 address by its /64, which one host usually holds whole.
// A peer address that does not parse counts as one unknown source.
func sourceOf(r *http.Request) netip.Prefix {
	a, ok := addrOf(r.RemoteAddr)
	if !ok {
		return netip.Prefix{}
	}
	bits := 32
	if a.Is6() {
		bits = 64
	}
	p, _ := a.Prefix(bits)
	return p
}

// limitBySource lets a request through only within its source's budget, else 429.
func (s *server) limitBySource(l *sourceLimits) func(http.Handler) http.Handler {
	return func(next http.Handler) http.Handler {
		return s.handle(func(w http.ResponseWriter, r *http.Request) error {
			if err := l.take(r); err != nil {
				return err
			}
			next.ServeHTTP(w, r)
			return nil
		})
	}
}
