package voice

import (
	"container/list"
	"sync"
	"time"
)

// pending is a question waiting for the next utterance of its conversation: a confirm turn
// (docs/design.md#rule-18), a question for a missing argument, a server's question during a
// call, or which of the rows sharing a spoken name is meant (docs/design.md#rule-17). Each is bound to the row, the arguments so far and the fingerprint: any change of the
// row in between voids it.
type pending struct {
	asking       bool       // a question for missing (else a confirm)
	server       *serverAsk // a server's question (else a confirm or a question for missing)
	conversation string
	toolID       int64
	fingerprint  string
	updatedAt    time.Time // any change to the row since the question voids it
	args         map[string]any
	argsKey      string   // canonical form of args, so nothing can swap them in between
	missing      []string // asking: the properties still to fill; the first is asked for
	tries        int      // asking, server: how often the current value was asked for
	expires      time.Time
	// question is the reply that put the question, said again when the owner asks "what?".
	question Reply
	choice   *choice // a "which one?" question (else toolID names the row)
}

// dropped is told that p was forgotten unanswered: a call waiting for a server's answer stops.
func (p *pending) dropped() {
	if p.server != nil {
		p.server.drop()
	}
}

// conversations holds pending questions in memory, bounded in both time and count: a flood of
// conversation ids evicts the oldest instead of growing without bound.
type conversations struct {
	mu    sync.Mutex
	max   int
	order *list.List // of *pending, oldest first
	byID  map[string]*list.Element
}

func newConversations(max int) *conversations {
	return &conversations{max: max, order: list.New(), byID: make(map[string]*list.Element)}
}

// put replaces any pending question of p's conversation.
func (c *conversations) put(p *pending) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if el, ok := c.byID[p.conversation]; ok {
		c.order.Remove(el)
		el.Value.(*pending).dropped()
	}
	c.byID[p.conversation] = c.order.PushBack(p)
	for c.order.Len() > c.max {
		oldest := c.order.Front()
		c.order.Remove(oldest)
		delete(c.byID, oldest.Value.(*pending).conversation)
		oldest.Value.(*pending).dropped()
	}
}

// take removes and returns the pending question of a conversation: an answer is used once,
// whatever it says. Entries expired long ago are dropped on the way.
func (c *conversations) take(conversation string, now time.Time) (*pending, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.pruneLocked(now)
	el, ok := c.byID[conversation]
	if !ok {
		return nil, false
	}
	c.order.Remove(el)
	delete(c.byID, conversation)
	return el.Value.(*pending), true
}

// waiting returns the question waiting in a conversation, leaving it there.
func (c *conversations) waiting(conversation string) (*pending, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	el, ok := c.byID[conversation]
	if !ok {
		return nil, false
	}
	return el.Value.(*pending), true
}

// pruneLocked drops entries that expired more than graceAfterExpiry ago. They are kept a little
// past expiry so a late "yes" hears that it was too late instead of "I don't know that".
func (c *conversations) pruneLocked(now time.Time) {
	for el := c.order.Front(); el != nil; {
		p := el.Value.(*pending)
		if now.Sub(p.expires) < graceAfterExpiry {
			// put appends, and every entry lives equally long, so the rest are newer.
			return
		}
		next := el.Next()
		c.order.Remove(el)
		delete(c.byID, p.conversation)
		p.dropped()
		el = next
	}
}

// clear forgets every pending question (on lock).
func (c *conversations) clear() {
	c.mu.Lock()
	defer c.mu.Unlock()
	for el := c.order.Front(); el != nil; el = el.Next() {
		el.Value.(*pending).dropped()
	}
	c.order.Init()
	c.byID = make(map[string]*list.Element)
}

func (c *conversations) len() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.order.Len()
}

const graceAfterExpiry = 10 * time.Minute
