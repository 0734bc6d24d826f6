package mcp

// Raw MCP servers that misbehave on purpose. go-sdk's own server is too well-behaved to stall
// halfway through a message or answer with the wrong id, so these speak just enough JSON-RPC by
// hand: streamable HTTP as an http.Handler in the test process, and stdio as this very test
// binary re-executed (see TestMain and runHostileStdio).

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"maven/app/config"
)

// Environment of a re-executed test binary: helperEnv selects what it does instead of running
// tests, hostileScriptEnv carries a hostile stdio server's script as JSON.
const (
	helperEnv        = "MAVEN_MCP_TEST_HELPER"
	hostileScriptEnv = "MAVEN_HOSTILE_SCRIPT"
)

// misbehaviour is how a hostile server answers one method.
type misbehaviour string

const (
	answerOK        misbehaviour = ""
	answerHang      misbehaviour = "hang"       // start the answer, then stall for ever
	answerGarbage   misbehaviour = "garbage"    // bytes that are not JSON
	answerWrongID   misbehaviour = "wrong-id"   // a well-formed answer to a request never made
	answerNoID      misbehaviour = "no-id"      // a result without an id
	answerWrongType misbehaviour = "wrong-type" // a result of the wrong shape
	answerBig       misbehaviour = "big"        // a result of BigBytes bytes
	answerBigError  misbehaviour = "big-error"  // a JSON-RPC error whose message is BigBytes long
	answerDrop      misbehaviour = "drop"       // start the answer, then drop the connection or exit
)

// hostileTool is one tool a hostile server lists when it lists at all.
type hostileTool struct {
	Name        string `json:"name"`
	Description string `json:"description"`
	ReadOnly    bool   `json:"readOnly"`
}

// hostileScript says how a hostile server behaves.
type hostileScript struct {
	Tools []hostileTool `json:"tools"`
	// On maps a method (initialize, tools/list, tools/call, or "GET" for the standalone stream
	// of streamable HTTP) to its misbehaviour; others are answered properly.
	On map[string]misbehaviour `json:"on,omitempty"`
	// Storm is how many notifications/tools/list_changed to send per second once initialized,
	// while the file StormGate exists (always if it is empty).
	Storm     int    `json:"storm,omitempty"`
	StormGate string `json:"stormGate,omitempty"`
	// Churn makes every tools/list describe every tool differently.
	Churn bool `json:"churn,omitempty"`
	// BigBytes is the size of the payload of answerBig.
	BigBytes int `json:"bigBytes,omitempty"`
}

// listResult is the tools/list result of the n-th listing (from 1).
func (s *hostileScript) listResult(n int64) []byte {
	type wireTool struct {
		Name        string         `json:"name"`
		Description string         `json:"description"`
		InputSchema map[string]any `json:"inputSchema"`
		Annotations map[string]any `json:"annotations,omitempty"`
	}
	tools := make([]wireTool, 0, len(s.Tools))
	for _, t := range s.Tools {
		desc := t.Description
		if s.Churn {
			desc = fmt.Sprintf("%s (listing %d)", desc, n)
		}
		wt := wireTool{Name: t.Name, Description: desc, InputSchema: map[string]any{"type": "object"}}
		if t.ReadOnly {
			wt.Annotations = map[string]any{"readOnlyHint": true}
		}
		tools = append(tools, wt)
	}
	b, err := json.Marshal(map[string]any{"tools": tools})
	if err != nil {
		panic(err)
	}
	return b
}

// sdkTools returns the tools as a client decodes them from an unchurned listing, for seeding
// rows as if an earlier session had listed them.
func (s *hostileScript) sdkTools() []*sdk.Tool {
	var res sdk.ListToolsResult
	if err := json.Unmarshal(s.listResult(0), &res); err != nil {
		panic(err)
	}
	return res.Tools
}

// stdioConfig runs the script as a stdio server: this test binary, re-executed.
func (s *hostileScript) stdioConfig() config.Server {
	b, err := json.Marshal(s)
	if err != nil {
		panic(err)
	}
	exe, err := os.Executable()
	if err != nil {
		panic(err)
	}
	return config.Server{Type: config.TransportStdio, Command: exe,
		Env: map[string]string{helperEnv: "hostile-stdio", hostileScriptEnv: string(b)}}
}

// rpcMessage is the part of a JSON-RPC message the hostile servers look at.
type rpcMessage struct {
	ID     json.RawMessage `json:"id,omitempty"`
	Method string          `json:"method,omitempty"`
	Params json.RawMessage `json:"params,omitempty"`
}

// storming reports whether the storm gate is open.
func (s *hostileScript) storming() bool {
	if s.StormGate == "" {
		return true
	}
	_, err := os.Stat(s.StormGate)
	return err == nil
}

var listChangedJSON = []byte(`{"jsonrpc":"2.0","method":"notifications/tools/list_changed"}`)

// answer writes the answer to a request as one JSON-RPC message without a trailing newline. For
// answerHang and answerDrop it writes only the first half and reports that the caller must now
// stall or drop. n counts the requests of this method so far, from 1.
func (s *hostileScript) answer(w io.Writer, how misbehaviour, msg rpcMessage, n int64) (unfinished bool) {
	id := string(msg.ID)
	result := func(r []byte) {
		fmt.Fprintf(w, `{"jsonrpc":"2.0","id":%s,"result":%s}`, id, r)
	}
	switch how {
	case answerHang, answerDrop:
		fmt.Fprintf(w, `{"jsonrpc":"2.0","id":%s,"result":{"tools":[{"name":"half`, id)
		return true
	case answerGarbage:
		io.WriteString(w, "\x00\xff this is not JSON {{{")
		return false
	case answerWrongID:
		id = "987654321"
	case answerNoID:
		io.WriteString(w, `{"jsonrpc":"2.0","result":{}}`)
		return false
	case answerBigError:
		fmt.Fprintf(w, `{"jsonrpc":"2.0","id":%s,"error":{"code":-32000,"message":"`, id)
		writeFiller(w, s.BigBytes)
		io.WriteString(w, `"}}`)
		return false
	case answerWrongType:
		switch msg.Method {
		case "tools/list":
			result([]byte(`{"tools":"not a list"}`))
		case "tools/call":
			result([]byte(`{"content":"not a list","isError":"maybe"}`))
		default:
			result([]byte(`"not an object"`))
		}
		return false
	case answerBig:
		// Streamed, so the server itself never holds the payload.
		switch msg.Method {
		case "tools/list":
			// The usual tools, then one more with a huge description.
			list := s.listResult(0)
			fmt.Fprintf(w, `{"jsonrpc":"2.0","id":%s,"result":%s,{"name":"huge","inputSchema":{"type":"object"},"description":"`,
				id, bytes.TrimSuffix(list, []byte("]}")))
			writeFiller(w, s.BigBytes)
			io.WriteString(w, `"}]}}`)
		default:
			fmt.Fprintf(w, `{"jsonrpc":"2.0","id":%s,"result":{"content":[{"type":"text","text":"`, id)
			writeFiller(w, s.BigBytes)
			io.WriteString(w, `"}]}}`)
		}
		return false
	}
	switch msg.Method {
	case "initialize":
		var p struct {
			ProtocolVersion string `json:"protocolVersion"`
		}
		json.Unmarshal(msg.Params, &p)
		if p.ProtocolVersion == "" {
			p.ProtocolVersion = "2025-11-25"
		}
		b, _ := json.Marshal(map[string]any{
			"protocolVersion": p.ProtocolVersion,
			"capabilities":    map[string]any{"tools": map[string]any{"listChanged": true}},
			"serverInfo":      map[string]any{"name": "hostile", "version": "0"},
		})
		result(b)
	case "ping":
		result([]byte(`{}`))
	case "tools/list":
		result(s.listResult(n))
	case "tools/call":
		result([]byte(`{"content":[{"type":"text","text":"hostile answered"}]}`))
	default:
		fmt.Fprintf(w, `{"jsonrpc":"2.0","id":%s,"error":{"code":-32601,"message":"method not found"}}`, id)
	}
	return false
}

var filler = bytes.Repeat([]byte("x"), 64<<10)

func writeFiller(w io.Writer, n int) {
	for n > 0 {
		k := min(n, len(filler))
		if _, err := w.Write(filler[:k]); err != nil {
			return
		}
		n -= k
	}
}

// counts tallies requests by method.
type counts struct {
	mu sync.Mutex
	n  map[string]int64
}

func (c *counts) add(method string) int64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.n == nil {
		c.n = map[string]int64{}
	}
	c.n[method]++
	return c.n[method]
}

func (c *counts) get(method string) int64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.n[method]
}

// hostileHTTP serves a hostileScript over streamable HTTP.
type hostileHTTP struct {
	script   hostileScript
	requests counts
	notified atomic.Int64 // list_changed notifications written
	quit     chan struct{}
	quitOnce sync.Once
}

func newHostileHTTP(script hostileScript) *hostileHTTP {
	return &hostileHTTP{script: script, quit: make(chan struct{})}
}

// close releases the handlers that stall, so the test server can shut down.
func (h *hostileHTTP) close() { h.quitOnce.Do(func() { close(h.quit) }) }

func (h *hostileHTTP) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	switch r.Method {
	case http.MethodGet:
		h.requests.add("GET")
		if h.script.On["GET"] == answerHang {
			// The standalone stream: accepted, and not a byte of an answer.
			select {
			case <-r.Context().Done():
			case <-h.quit:
			}
			return
		}
		if h.script.Storm == 0 {
			w.WriteHeader(http.StatusMethodNotAllowed)
			return
		}
		h.storm(w, r)
		return
	case http.MethodDelete:
		w.WriteHeader(http.StatusOK)
		return
	case http.MethodPost:
	default:
		w.WriteHeader(http.StatusMethodNotAllowed)
		return
	}
	body, err := io.ReadAll(io.LimitReader(r.Body, 1<<20))
	var msg rpcMessage
	if err != nil || json.Unmarshal(body, &msg) != nil {
		w.WriteHeader(http.StatusBadRequest)
		return
	}
	n := h.requests.add(msg.Method)
	if len(msg.ID) == 0 {
		w.WriteHeader(http.StatusAccepted)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	if msg.Method == "initialize" {
		w.Header().Set("Mcp-Session-Id", "hostile-"+strconv.FormatInt(n, 10))
	}
	w.WriteHeader(http.StatusOK)
	how := h.script.On[msg.Method]
	if !h.script.answer(w, how, msg, n) {
		return
	}
	http.NewResponseController(w).Flush()
	if how == answerDrop {
		// Abort the response: the client sees the connection close halfway through the body.
		panic(http.ErrAbortHandler)
	}
	select {
	case <-r.Context().Done():
	case <-h.quit:
	}
}

// storm streams list_changed notifications on the standalone SSE stream in batches every 10ms.
func (h *hostileHTTP) storm(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "text/event-stream")
	w.WriteHeader(http.StatusOK)
	rc := http.NewResponseController(w)
	rc.Flush()
	batch := max(1, h.script.Storm/100)
	var buf bytes.Buffer
	for range batch {
		buf.WriteString("data: ")
		buf.Write(listChangedJSON)
		buf.WriteString("\n\n")
	}
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case <-r.Context().Done():
			return
		case <-h.quit:
			return
		case <-tick.C:
		}
		if !h.script.storming() {
			continue
		}
		if _, err := w.Write(buf.Bytes()); err != nil {
			return
		}
		if rc.Flush() != nil {
			return
		}
		h.notified.Add(int64(batch))
	}
}

// runHostileStdio is the hostile stdio server: newline-delimited JSON-RPC on stdin and stdout,
// misbehaving as the script in the environment says. It exits when stdin closes, or at once
// when it drops a call.
func runHostileStdio() int {
	var script hostileScript
	if err := json.Unmarshal([]byte(os.Getenv(hostileScriptEnv)), &script); err != nil {
		fmt.Fprintln(os.Stderr, "hostile: bad script:", err)
		return 2
	}
	var (
		mu      sync.Mutex // one whole message per write; nothing after a stall
		stalled bool
		seen    counts
	)
	write := func(f func(io.Writer) bool) bool {
		mu.Lock()
		defer mu.Unlock()
		if stalled {
			return false
		}
		var buf bytes.Buffer
		unfinished := f(&buf)
		if !unfinished {
			buf.WriteByte('\n')
		}
		os.Stdout.Write(buf.Bytes())
		return unfinished
	}
	storming := false
	in := bufio.NewReaderSize(os.Stdin, 1<<20)
	for {
		line, err := in.ReadBytes('\n')
		if err != nil {
			return 0 // stdin closed: the client is done with us
		}
		var msg rpcMessage
		if json.Unmarshal(line, &msg) != nil {
			continue
		}
		n := seen.add(msg.Method)
		if len(msg.ID) == 0 {
			if msg.Method == "notifications/initialized" && script.Storm > 0 && !storming {
				storming = true
				go stdioStorm(&script, write)
			}
			continue
		}
		how := script.On[msg.Method]
		if !write(func(w io.Writer) bool { return script.answer(w, how, msg, n) }) {
			continue
		}
		if how == answerDrop {
			os.Exit(3) // gone in the middle of the call
		}
		mu.Lock()
		stalled = true // half a line is out; never another byte
		mu.Unlock()
	}
}

func stdioStorm(script *hostileScript, write func(func(io.Writer) bool) bool) {
	batch := max(1, script.Storm/100)
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	for range tick.C {
		if !script.storming() {
			continue
		}
		write(func(w io.Writer) bool {
			for i := range batch {
				if i > 0 {
					w.Write([]byte{'\n'})
				}
				w.Write(listChangedJSON)
			}
			return false
		})
	}
}
