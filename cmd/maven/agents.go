package main

import (
	"context"
	"errors"
	"fmt"
	"time"

	"maven/app/activity"
	"maven/app/agents"
	"maven/app/clients"
	"maven/handlers"
)

// openAgents builds the MCP server agents reach (docs/design.md#rule-26): each approved
// client's tools as its policy says, run through the one run path, kept current while the daemon
// runs; a client's new tools or its revocation reach its agents at once (OnChange).
func (s *services) openAgents(ctx context.Context, st startup) error {
	var err error
	// The calls' entries are written off the agents' path (activity.Batcher), closed before
	// the database.
	feed := activity.NewBatcher(callCounter{s.events, s.clients}, st.log)
	s.closers = append(s.closers, feed.Close)
	if s.agents, err = agents.New(agents.Deps{Rows: s.tools, Runner: s.runner, Allow: s.mcp, Limits: s.limits, Lock: s.vault,
		Clients: clientPolicies{s.clients}, Activity: feed, Pending: s.pending},
		agents.Options{Logger: st.log, Version: version}); err != nil {
		return err
	}
	s.clients.OnChange(s.agents.ClientChanged)
	run, stop := context.WithCancel(ctx)
	go s.agents.Run(run)
	s.closers = append(s.closers, stop)
	return nil
}

// clientPolicies are the clients' tools as the agents' service reads them (agents.Clients).
type clientPolicies struct{ c *clients.Service }

func (p clientPolicies) Policy(ctx context.Context, clientID string) (agents.Policy, error) {
	g, err := p.c.Policy(ctx, clientID)
	if errors.Is(err, clients.ErrNotFound) {
		return agents.Policy{}, fmt.Errorf("%w: %w", agents.ErrUnknownClient, err)
	}
	if err != nil {
		return agents.Policy{}, err
	}
	return agents.Policy{Name: g.Name, AllTools: g.AllTools, ToolIDs: g.ToolIDs}, nil
}

// agentTokens verify the tokens agents present at /mcp and /sse (handlers.AgentTokens), with
// the clients' Authenticate.
type agentTokens struct{ c *clients.Service }

func (a agentTokens) Verify(ctx context.Context, token, resource string) (string, time.Time, error) {
	g, err := a.c.Authenticate(ctx, token, resource)
	if errors.Is(err, clients.ErrInvalidToken) {
		return "", time.Time{}, fmt.Errorf("%w: %w", handlers.ErrAgentToken, err)
	}
	if err != nil {
		return "", time.Time{}, err
	}
	return g.ClientID, g.Expires, nil
}

// callCounter is the agents' activity feed: it records their events, and counts each call for
// its client, which /clients shows: the calls of one write in one count per client.
type callCounter struct {
	feed    *activity.Log
	clients *clients.Service
}

func (c callCounter) Append(ctx context.Context, events ...activity.Event) error {
	err := c.feed.Append(ctx, events...)
	calls := map[string]int64{}
	var order []string
	for _, e := range events {
		if id, _ := e.Detail["client_id"].(string); e.Action == activity.ActionAgentCall && id != "" {
			if calls[id] == 0 {
				order = append(order, id)
			}
			calls[id]++
		}
	}
	for _, id := range order {
		c.clients.RecordCalls(ctx, id, calls[id])
	}
	return err
}
