package clients

import (
	"context"
	"crypto/sha256"
	"slices"
	"sync"
	"time"
)

// maxCached bounds each cache: the approved clients, and the access tokens checked lately.
const maxCached = 1024

// approvedCache holds the approved clients as the database does. Every write to a client's
// state or tools goes through the Service, which voids the cache once the write is done, so an
// agent's request needs no read of the database to learn its client's tools (Authenticate runs
// on every request). A read that such a write overtook is not kept: its generation is past.
type approvedCache struct {
	mu      sync.Mutex
	gen     uint64
	clients map[string]Client
}

func (c *approvedCache) generation() uint64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.gen
}

func (c *approvedCache) get(id string) (Client, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	cl, ok := c.clients[id]
	return cl, ok
}

func (c *approvedCache) put(gen uint64, cl Client) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if gen != c.gen {
		return
	}
	if c.clients == nil || len(c.clients) >= maxCached {
		c.clients = map[string]Client{}
	}
	c.clients[cl.ID] = cl
}

// changed voids the cache: a client's state or tools were written.
func (c *approvedCache) changed() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.gen++
	c.clients = nil
}

// approved returns the client id, from the cache or the database; ErrNotFound if there is
// none. Only an approved client is cached.
func (s *Service) approved(ctx context.Context, id string) (Client, error) {
	if c, ok := s.cache.get(id); ok {
		return c, nil
	}
	gen := s.cache.generation()
	c, err := s.store.Client(ctx, id)
	if err != nil {
		return Client{}, err
	}
	if c.State == StateApproved {
		s.cache.put(gen, c)
	}
	return c, nil
}

// tokenCache remembers the access tokens Authenticate verified, by their SHA-256 (so only the
// token itself finds its entry), with what it learnt of each. Any token deleted or revoked
// anywhere (a refresh, a revocation, a reuse, a client revoked) moves the generation on, which
// voids every entry: revocations are rare, and a check after one reads the database again.
type tokenCache struct {
	mu      sync.Mutex
	gen     uint64
	entries map[[sha256.Size]byte]verified
}

// verified is what Authenticate learnt of an access token.
type verified struct {
	gen      uint64
	clientID string
	audience []string
	expires  time.Time
}

// generation is the current generation, read before the database is: an entry made from a
// read that a revocation overtook is void at once.
func (c *tokenCache) generation() uint64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.gen
}

func (c *tokenCache) get(token string) (verified, bool) {
	key := sha256.Sum256([]byte(token))
	c.mu.Lock()
	defer c.mu.Unlock()
	v, ok := c.entries[key]
	return v, ok && v.gen == c.gen
}

func (c *tokenCache) put(token string, v verified) {
	key := sha256.Sum256([]byte(token))
	c.mu.Lock()
	defer c.mu.Unlock()
	if v.gen != c.gen {
		return
	}
	if c.entries == nil || len(c.entries) >= maxCached {
		c.entries = map[[sha256.Size]byte]verified{}
	}
	v.audience = slices.Clone(v.audience)
	c.entries[key] = v
}

// revoked voids every entry: some token was deleted or revoked.
func (c *tokenCache) revoked() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.gen++
	c.entries = nil
}
