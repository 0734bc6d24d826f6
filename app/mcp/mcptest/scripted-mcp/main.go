// Command scripted-mcp is a scripted MCP server on stdio for tests. It offers the tools listed
// in a JSON file (an array of mcptest.ToolSpec) and reads the file again on SIGHUP, after which
// connected clients are sent notifications/tools/list_changed.
//
// Usage:
//
//	scripted-mcp [-calls FILE] [-pid FILE] [-redefine-every D] [-rename-every D] [-http ADDR -addr FILE]
//	             [-era modern|legacy] [-ttl D] [-quiet] TOOLS.json
//	scripted-mcp -relay URL [-token T] [-era modern|legacy] -http ADDR -addr FILE
//
// With -calls, every tool call appends one line "NAME ARGS-JSON" to FILE. With -pid, the
// process writes its pid to FILE once it is serving. -redefine-every and -rename-every make it
// a hostile server that churns its tools: every D it gives every tool a new description ("…
// (version N)"), or a new name ("NAME_vN"). With -http it serves streamable HTTP on ADDR (path
// /mcp, port 0 for any) instead of stdio, and writes the address it listens on to the -addr
// FILE: a server in a process of its own, as real ones are. -era restricts it to one protocol
// era (mcptest.Modern or mcptest.Legacy; go-sdk's default otherwise), -ttl puts a ttlMs hint on
// its tool lists, and -quiet leaves listChanged out of its capabilities.
//
// With -relay it is instead the bare floor of an MCP gateway (mcptest.Relay): it offers the tools
// of the streamable-HTTP server at URL (sending -token as a bearer token) and makes every call
// there, with nothing between.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/signal"
	"strconv"
	"sync"
	"syscall"
	"time"

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
	redefineEvery := flag.Duration("redefine-every", 0, "give every tool a new description this often")
	renameEvery := flag.Duration("rename-every", 0, "give every tool a new name this often")
	httpAddr := flag.String("http", "", "serve streamable HTTP on this address instead of stdio")
	addrFile := flag.String("addr", "", "with -http, write the address listened on to this file")
	era := flag.String("era", "", `speak only this protocol era: "modern" (2026-07-28) or "legacy" (2025)`)
	ttl := flag.Duration("ttl", 0, "the ttlMs hint on every tools/list answer")
	quiet := flag.Bool("quiet", false, "do not announce list changes")
	relay := flag.String("relay", "", "offer the tools of the streamable-HTTP server at this URL, and call them there")
	token := flag.String("token", "", "with -relay, the bearer token to send")
	flag.Parse()
	protocols, err := eraProtocols(*era)
	if err != nil {
		return err
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer stop()
	if *relay != "" {
		return serveRelay(ctx, *relay, *token, protocols, *httpAddr, *addrFile)
	}
	if flag.NArg() != 1 {
		return fmt.Errorf("usage: scripted-mcp [-calls FILE] [-pid FILE] [-redefine-every D] [-rename-every D] [-http ADDR -addr FILE] [-era modern|legacy] [-ttl D] [-quiet] TOOLS.json")
	}
	opts := mcptest.Options{ToolsTTL: *ttl, Quiet: *quiet, Protocols: protocols}
	toolsFile := flag.Arg(0)
	specs, err := mcptest.LoadTools(toolsFile)
	if err != nil {
		return err
	}
	s := mcptest.New(opts, specs...)
	if *callsFile != "" {
		s.OnCall = logCalls(*callsFile)
	}
	reloadOnHangup(s, toolsFile)

	if *redefineEvery > 0 {
		go churn(s, specs, *redefineEvery, func(spec *mcptest.ToolSpec, n int) {
			spec.Description = fmt.Sprintf("%s (version %d)", spec.Description, n)
		})
	}
	if *renameEvery > 0 {
		go churn(s, specs, *renameEvery, func(spec *mcptest.ToolSpec, n int) {
			spec.Name = fmt.Sprintf("%s_v%d", spec.Name, n)
		})
	}

	if *pidFile != "" {
		if err := os.WriteFile(*pidFile, []byte(strconv.Itoa(os.Getpid())), 0o644); err != nil {
			return err
		}
	}
	if *httpAddr != "" {
		return serveHTTP(ctx, s.HTTPHandler(), *httpAddr, *addrFile)
	}
	return s.RunStdio(ctx)
}

// logCalls returns an OnCall that appends one line "NAME ARGS-JSON" per call to the file at
// path.
func logCalls(path string) func(name string, args json.RawMessage) {
	var mu sync.Mutex
	return func(name string, args json.RawMessage) {
		mu.Lock()
		defer mu.Unlock()
		f, err := os.OpenFile(path, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
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

// reloadOnHangup reads the tools file again on every SIGHUP and offers what it lists.
func reloadOnHangup(s *mcptest.Scripted, toolsFile string) {
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
}

// churn replaces the tools with changed copies of specs every d, for ever.
func churn(s *mcptest.Scripted, specs []mcptest.ToolSpec, d time.Duration, change func(*mcptest.ToolSpec, int)) {
	t := time.NewTicker(d)
	defer t.Stop()
	for n := 1; ; n++ {
		<-t.C
		next := make([]mcptest.ToolSpec, len(specs))
		for i, spec := range specs {
			change(&spec, n)
			next[i] = spec
		}
		s.Replace(next...)
	}
}

// eraProtocols are the protocol versions of the -era flag's value.
func eraProtocols(era string) ([]string, error) {
	switch era {
	case "":
		return nil, nil
	case "modern":
		return mcptest.Modern, nil
	case "legacy":
		return mcptest.Legacy, nil
	}
	return nil, fmt.Errorf(`-era: want "modern" or "legacy", got %q`, era)
}

// serveRelay serves a relay of the server at url over streamable HTTP on addr.
func serveRelay(ctx context.Context, url, token string, protocols []string, addr, addrFile string) error {
	if addr == "" {
		return errors.New("-relay serves streamable HTTP only: give -http ADDR")
	}
	r, err := mcptest.NewRelay(ctx, url, token, protocols)
	if err != nil {
		return err
	}
	defer r.Close()
	return serveHTTP(ctx, r.HTTPHandler(), addr, addrFile)
}

// serveHTTP serves h at /mcp on addr until ctx is done, writing the address it listens on to
// addrFile.
func serveHTTP(ctx context.Context, h http.Handler, addr, addrFile string) error {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return err
	}
	mux := http.NewServeMux()
	mux.Handle("/mcp", h)
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	go func() {
		<-ctx.Done()
		srv.Close()
	}()
	if addrFile != "" {
		if err := os.WriteFile(addrFile, []byte(ln.Addr().String()), 0o644); err != nil {
			return err
		}
	}
	if err := srv.Serve(ln); !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}
