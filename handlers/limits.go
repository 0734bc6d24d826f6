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
	// A source may register a few agents' clients at once, then one a minute: each waits for
	// consent, at most clients.MaxPending in all, so filling that takes some ten addresses.
	registrationBudget = budget{every: time.Minute, burst: 10}
	// A source may open a few consent pages at once, then one every 3 s: each may fetch a
	// client's metadata document.
	authorizeBudget = budget{every: 3 * time.Second, burst: 20}
)

// maxSources bounds each table of per-source buckets, and the table of known browsers'.
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

// limits is a token bucket per key (golang.org/x/time/rate): a source of requests, or a known
// browser. The table holds at most size keys: when it is full, the key seen least recently is
// forgotten. That key starts afresh if it comes back, so an attacker who cycles through
// addresses gains nothing they could not have by using a new address anyway, and the table never
// grows.
type limits[K comparable] struct {
	budget budget
	size   int
	now    func() time.Time

	mu     sync.Mutex
	keys   map[K]*list.Element // of *bucket[K]
	recent *list.List          // most recently seen first
}

type bucket[K comparable] struct {
	key K
	lim *rate.Limiter
}

// sourceLimits are the buckets of sources (sourceOf).
type sourceLimits = limits[netip.Prefix]

func newLimits[K comparable](b budget, size int, now func() time.Time) *limits[K] {
	return &limits[K]{budget: b, size: size, now: now, keys: map[K]*list.Element{}, recent: list.New()}
}

// take spends one token of key's bucket; see take.
func (l *limits[K]) take(key K) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	e, ok := l.keys[key]
	if ok {
		l.recent.MoveToFront(e)
	} else {
		if l.recent.Len() >= l.size {
			oldest := l.recent.Back()
			delete(l.keys, oldest.Value.(*bucket[K]).key)
			l.recent.Remove(oldest)
		}
		e = l.recent.PushFront(&bucket[K]{key: key, lim: l.budget.limiter()})
		l.keys[key] = e
	}
	return take(e.Value.(*bucket[K]).lim, l.now())
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

// limitCeremonies lets the begin of a ceremony anyone can begin (a sign-in, an unlock, a setup)
// through only within its budget, else 429: a browser in which a passkey proved the owner before
// (its marker says so) has a budget of its own; any other spends its source's. So strangers
// behind the owner's NAT, or in its IPv6 /64, spend only their share, never the owner's.
func (s *server) limitCeremonies(next http.Handler) http.Handler {
	return s.handle(func(w http.ResponseWriter, r *http.Request) error {
		if err := s.takeAnonymous(r, s.ceremoniesByBrowser, s.ceremoniesBySource); err != nil {
			return err
		}
		next.ServeHTTP(w, r)
		return nil
	})
}

// limitAuthorize lets a consent page through only within its budget, the browser's own where a
// passkey proved the owner in it before, else its source's.
func (s *server) limitAuthorize(next http.Handler) http.Handler {
	return s.handle(func(w http.ResponseWriter, r *http.Request) error {
		if err := s.takeAnonymous(r, s.authorizeByBrowser, s.authorizeBySource); err != nil {
			return err
		}
		next.ServeHTTP(w, r)
		return nil
	})
}

// takeAnonymous spends one token of r's budget: its browser's in byBrowser when its marker says
// a passkey proved the owner in it before, else its source's in bySource.
func (s *server) takeAnonymous(r *http.Request, byBrowser *limits[string], bySource *sourceLimits) error {
	if id, ok := s.auth.KnownBrowser(r.Context(), browserMarkerOf(r)); ok {
		return byBrowser.take(id)
	}
	return bySource.take(sourceOf(r))
}
