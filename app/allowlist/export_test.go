package allowlist

import "context"

// Withdraw withdraws one row with the reason recorded as its provenance.
func (s *Service) Withdraw(ctx context.Context, id int64, actor, reason string) (t Tool, err error) {
	err = s.Update(ctx, func(tx *Tx) error {
		t, err = tx.Withdraw(ctx, id, actor, reason)
		return err
	})
	return t, err
}
