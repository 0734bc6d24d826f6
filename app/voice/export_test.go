package voice

import "context"

// Sync waits until every turn taken so far is in the audit trail, or ctx is done, so a test
// reads the feed once the turns it took are in it.
func (s *Service) Sync(ctx context.Context) error {
	done := make(chan struct{})
	s.audit.add(auditEvent{synced: done})
	s.audit.hurry()
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
