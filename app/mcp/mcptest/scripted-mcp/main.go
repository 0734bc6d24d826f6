// Command scripted-mcp is a scripted MCP server on stdio for tests. It offers the tools listed
// in a JSON file (an array of mcptest.ToolSpec) and reads the file again on SIGHUP, after which
// connected clients are sent notifications/tools/list_changed.
//
// Usage:
//
//	scripted-mcp [-calls FILE] [-pid FILE] TOOLS.json
//
// With -calls, every tool call appends one line "NAME ARGS-JSON" to FILE. With -pid, the
// process writes its pid to FILE once it is serving.
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"strconv"
	"sync"
	"syscall"

	"maven/app/mcp/mcptest"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "scripted-mcp:", err)
		os.Exit(1)
	}
}

func run() error {
	callsFile := flag.String("calls", "", "append one line per tool call to this file")
	pidFile := flag.String("pid", "", "write the pid to this file")
	flag.Parse()
	if flag.NArg() != 1 {
		return fmt.Errorf("usage: scripted-mcp [-calls FILE] [-pid FILE] TOOLS.json")
	}
	toolsFile := flag.Arg(0)
	specs, err := mcptest.LoadTools(toolsFile)
	if err != nil {
		return err
	}
	s := mcptest.NewScripted(specs...)
	if *callsFile != "" {
		var mu sync.Mutex
		s.OnCall = func(name string, args json.RawMessage) {
			mu.Lock()
			defer mu.Unlock()
			f, err := os.OpenFile(*callsFile, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
			if err != nil {
				fmt.Fprintln(os.Stderr, "scripted-mcp: calls file:", err)
				return
			}
			defer f.Close()
			if len(args) == 0 {
				args = json.RawMessage("{}")
			}
			fmt.Fprintf(f, "%s %s\n", name, args)
		}
	}

	hup := make(chan os.Signal, 1)
	signal.Notify(hup, syscall.SIGHUP)
	go func() {
		for range hup {
			specs, err := mcptest.LoadTools(toolsFile)
			if err != nil {
				fmt.Fprintln(os.Stderr, "scripted-mcp: reload:", err)
				continue
			}
			s.Replace(specs...)
			fmt.Fprintln(os.Stderr, "scripted-mcp: reloaded", len(specs), "tools")
		}
	}()

	if *pidFile != "" {
		if err := os.WriteFile(*pidFile, []byte(strconv.Itoa(os.Getpid())), 0o644); err != nil {
			return err
		}
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer stop()
	return s.RunStdio(ctx)
}
