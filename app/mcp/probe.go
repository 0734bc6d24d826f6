package mcp

import (
	"context"
	"fmt"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"maven/app/config"
)

// probeMisses is how many probes in a row must fail for a session to be given up: one lost
// probe is a blip, as one lost ping is (newClient).
const probeMisses = 2

// watchModern returns what tells serve that a 2026-07-28 server over HTTP is gone: the end of
// its subscriptions/listen stream (httpWatch) and a failed probe. Both are nil, never ready, for
// other sessions: go-sdk's pings watch a 2025-era session, and a stdio server that exits ends
// its connection.
func (s *supervisor) watchModern(sess *session) (listenEnded <-chan struct{}, probeFailed <-chan error) {
	if !sess.modern() || sess.via.kind != config.TransportHTTP {
		return nil, nil
	}
	failed := make(chan error, 1)
	if s.m.opts.KeepAlive > 0 {
		go s.probe(sess, failed)
	}
	return sess.watch.listenEnded, failed
}

// probe asks the server every KeepAlive whether it is there, with a server/discover of its own
// through the session's transport (the probe the 2026-07-28 revision has instead of ping),
// until the session ends. It reports probeMisses failures in a row on failed. A hung server is
// noticed so, and so is one that announces no list changes and so has no listen stream. A
// probe not answered within the interval is a miss even if go-sdk takes longer to give it up
// (a failed Connect may wait seconds to tell a hung server it cancelled): it is left to finish
// on its own, and no other starts meanwhile.
func (s *supervisor) probe(sess *session, failed chan<- error) {
	interval := s.m.opts.KeepAlive
	t := time.NewTicker(interval)
	defer t.Stop()
	var answer chan error // of the probe in flight, nil if none
	misses := 0
	for {
		select {
		case <-sess.ctx.Done():
			return
		case <-t.C:
		}
		if answer == nil {
			answer = make(chan error, 1)
			go func(answer chan<- error) { answer <- s.probeOnce(sess, interval) }(answer)
		}
		wait := time.NewTimer(interval)
		var err error
		select {
		case <-sess.ctx.Done():
			wait.Stop()
			return
		case err = <-answer:
			answer = nil
		case <-wait.C:
			err = fmt.Errorf("no answer within %s", interval)
		}
		wait.Stop()
		if err == nil {
			misses = 0
			continue
		}
		misses++
		s.logger.Warn("mcp server did not answer a probe", "error", s.errText(err), "misses", misses)
		if misses >= probeMisses {
			failed <- fmt.Errorf("no answer to %d probes in a row: %w", misses, err)
			return
		}
	}
}

// probeOnce sends one server/discover, bounded by timeout.
func (s *supervisor) probeOnce(sess *session, timeout time.Duration) error {
	ctx, cancel := context.WithTimeout(sess.ctx, timeout)
	defer cancel()
	cs, err := s.prober().Connect(ctx, sess.via.transport, &sdk.ClientSessionOptions{ProtocolVersion: modernProtocol})
	if err != nil {
		return err
	}
	cs.Close() // it answered; how the close goes says nothing more
	return nil
}
