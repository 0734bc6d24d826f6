package main

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"text/tabwriter"
	"time"

	"maven/app/mcp"
	"maven/app/reveal"
)

// ipcMCPServers is the read-only `mcp_servers` IPC method.
func (d *daemon) ipcMCPServers(context.Context, json.RawMessage) (any, error) {
	list := d.mcp.Status()
	if list == nil {
		list = []mcp.ServerStatus{}
	}
	return list, nil
}

func cliMCPServers(ctx context.Context, in *invocation, args []string) error {
	f, rest, _, err := in.parseClient("mcp-servers", args, true)
	if err != nil {
		return err
	}
	if len(rest) > 0 {
		return usagef("mcp-servers", "mcp-servers takes no arguments")
	}
	stdout := in.stdout
	var list []mcp.ServerStatus
	if err := f.call(ctx, "mcp_servers", nil, &list); err != nil {
		return err
	}
	if f.json {
		return writeJSON(stdout, list)
	}
	if len(list) == 0 {
		fmt.Fprintln(stdout, "no MCP servers configured")
		return nil
	}
	tw := tabwriter.NewWriter(stdout, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "NAME\tTRANSPORT\tSTATE\tSINCE\tTOOLS\tTARGET")
	for _, s := range list {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%d\t%s\n", reveal.OneLine(s.Name), s.Transport, s.State,
			s.Since.Local().Format(time.DateTime), s.Tools, reveal.OneLine(s.Target))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	for _, s := range list {
		fmt.Fprintf(stdout, "\n%s: %s", reveal.OneLine(s.Name), s.TrustText)
		if s.LastError != "" {
			fmt.Fprintf(stdout, "\n  last error: %s", reveal.OneLine(s.LastError))
		}
		if s.LastStderr != "" {
			fmt.Fprintf(stdout, "\n  its last lines on stderr:")
			for line := range strings.SplitSeq(s.LastStderr, "\n") {
				fmt.Fprintf(stdout, "\n    %s", reveal.OneLine(line))
			}
		}
	}
	fmt.Fprintln(stdout)
	return nil
}
