package ipc

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestHandleLine pins the exact bytes of replies that the socket tests only check in part.
func TestHandleLine(t *testing.T) {
	s := NewServer(nil, testHandlers())
	tests := []struct {
		name string
		line string
		want string // "" means no reply
	}{
		{"result", `{"jsonrpc":"2.0","id":1,"method":"echo","params":[1,2]}`,
			`{"jsonrpc":"2.0","id":1,"result":[1,2]}`},
		{"nil result is null", `{"jsonrpc":"2.0","id":1,"method":"echo"}`,
			`{"jsonrpc":"2.0","id":1,"result":null}`},
		{"null params are absent", `{"jsonrpc":"2.0","id":1,"method":"params","params":null}`,
			`{"jsonrpc":"2.0","id":1,"result":{"nil":true,"raw":""}}`},
		{"string id echoed", `{"jsonrpc":"2.0","id":"req-1","method":"echo"}`,
			`{"jsonrpc":"2.0","id":"req-1","result":null}`},
		{"null id is a request", `{"jsonrpc":"2.0","id":null,"method":"echo"}`,
			`{"jsonrpc":"2.0","id":null,"result":null}`},
		{"invalid UTF-8 in id is not echoed raw", "{\"jsonrpc\":\"2.0\",\"id\":\"\xff\",\"method\":\"echo\"}",
			"{\"jsonrpc\":\"2.0\",\"id\":\"\ufffd\",\"result\":null}"},
		{"surrounding whitespace and CR", " \t{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"echo\"}\r",
			`{"jsonrpc":"2.0","id":1,"result":null}`},
		{"unknown members ignored", `{"jsonrpc":"2.0","id":1,"method":"echo","extra":true}`,
			`{"jsonrpc":"2.0","id":1,"result":null}`},
		{"error with data", `{"jsonrpc":"2.0","id":1,"method":"rpcerr"}`,
			`{"jsonrpc":"2.0","id":1,"error":{"code":4001,"message":"no such tool","data":{"name":"x"}}}`},
		{"parse error", `{`,
			`{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"parse error: the line is not valid JSON"}}`},
		{"notification", `{"jsonrpc":"2.0","method":"echo"}`, ""},
		{"failing notification", `{"jsonrpc":"2.0","method":"fail"}`, ""},
		{"blank line", "  \r", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := s.handleLine(context.Background(), []byte(tt.line))
			if string(got) != tt.want {
				t.Errorf("handleLine(%q)\n got %s\nwant %s", tt.line, got, tt.want)
			}
		})
	}
}

// FuzzServeLine feeds arbitrary bytes to the per-line handler: it must never panic, and must
// answer every line with one well-formed JSON-RPC response, except blank lines and
// notifications, which get nothing.
func FuzzServeLine(f *testing.F) {
	seeds := []string{
		``,
		` `,
		`{`,
		`[]`,
		`null`,
		`"x"`,
		`{}`,
		`{"jsonrpc":"2.0","id":1,"method":"echo","params":{"a":[1,"\u00e9"]}}`,
		`{"jsonrpc":"2.0","id":"x","method":"sum","params":{"a":1,"b":2}}`,
		`{"jsonrpc":"2.0","id":1,"method":"sum","params":{"a":"1"}}`,
		`{"jsonrpc":"2.0","id":1.5e300,"method":"rpcerr"}`,
		`{"jsonrpc":"2.0","id":-0,"method":"fail"}`,
		`{"jsonrpc":"2.0","id":null,"method":"panic"}`,
		`{"jsonrpc":"2.0","id":1,"method":"badresult"}`,
		`{"jsonrpc":"2.0","id":1,"method":"baddata"}`,
		`{"jsonrpc":"2.0","method":"echo"}`,
		`{"jsonrpc":"2.0","method":"nope"}`,
		`{"jsonrpc":"2.0","id":{},"method":"echo"}`,
		`{"jsonrpc":"2.0","id":1,"method":"echo","params":"s"}`,
		`[{"jsonrpc":"2.0","id":1,"method":"echo"}]`,
		"{\"jsonrpc\":\"2.0\",\"id\":\"\xff\xfe\",\"method\":\"\xc3\"}",
		`{"jsonrpc":"2.0","jsonrpc":"1.0","id":1,"method":"echo"}`,
		"\x00",
	}
	for _, s := range seeds {
		f.Add([]byte(s))
	}
	handlers := testHandlers()
	delete(handlers, "count") // shared state would make runs depend on each other
	s := NewServer(nil, handlers)

	f.Fuzz(func(t *testing.T, line []byte) {
		got := s.handleLine(context.Background(), line)
		if got == nil {
			if len(bytes.TrimSpace(line)) == 0 {
				return
			}
			var members map[string]json.RawMessage
			if err := json.Unmarshal(line, &members); err != nil {
				t.Fatalf("no reply to %q, which is not an object: %v", line, err)
			}
			if _, ok := members["id"]; ok {
				t.Fatalf("no reply to %q, which has an id", line)
			}
			return
		}
		if bytes.IndexByte(got, '\n') >= 0 {
			t.Fatalf("reply %q contains a newline, which would break framing", got)
		}
		if !json.Valid(got) {
			t.Fatalf("reply %q is not valid JSON", got)
		}
		var members map[string]json.RawMessage
		if err := json.Unmarshal(got, &members); err != nil {
			t.Fatalf("reply %q is not an object: %v", got, err)
		}
		_, hasID := members["id"]
		_, hasResult := members["result"]
		_, hasError := members["error"]
		var e Error
		if hasError && json.Unmarshal(members["error"], &e) != nil {
			t.Fatalf("reply %q has a malformed error", got)
		}
		if string(members["jsonrpc"]) != `"2.0"` || !hasID || hasResult == hasError || len(members) != 3 {
			t.Fatalf("reply %q is not a JSON-RPC 2.0 response", got)
		}
	})
}

func TestReadLine(t *testing.T) {
	tests := []struct {
		name    string
		input   string
		limit   int
		want    []string
		wantErr error
	}{
		{"lines", "a\nbb\n", 4, []string{"a", "bb"}, io.EOF},
		{"final line without newline", "a\nbb", 4, []string{"a", "bb"}, io.EOF},
		{"exactly the limit", "abcd\n", 4, []string{"abcd"}, io.EOF},
		{"exactly the limit at EOF", "abcd", 4, []string{"abcd"}, io.EOF},
		{"one over the limit", "abcde\n", 4, nil, errLineTooLong},
		{"one over the limit at EOF", "abcde", 4, nil, errLineTooLong},
		{"longer than the reader's buffer", strings.Repeat("x", 40) + "\n", 40, []string{strings.Repeat("x", 40)}, io.EOF},
		{"too long across buffer refills", strings.Repeat("x", 41) + "\n", 40, nil, errLineTooLong},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := bufio.NewReaderSize(strings.NewReader(tt.input), 16)
			var got []string
			var err error
			for {
				var line []byte
				line, err = readLine(r, nil, tt.limit)
				if err != nil {
					break
				}
				got = append(got, string(line))
			}
			if !errors.Is(err, tt.wantErr) {
				t.Errorf("final error = %v, want %v", err, tt.wantErr)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("lines (-want +got):\n%s", diff)
			}
		})
	}
}
