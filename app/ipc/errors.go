package ipc

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
)

// The error codes JSON-RPC 2.0 reserves; handlers may also use their own codes.
const (
	ParseError     = -32700
	InvalidRequest = -32600
	MethodNotFound = -32601
	InvalidParams  = -32602
	InternalError  = -32603
)

// Error is a JSON-RPC error object. A handler returns one (possibly wrapped) to send the client a
// specific code and message; the client side gets it back from Call.
type Error struct {
	Code    int    `json:"code"`
	Message string `json:"message"`
	Data    any    `json:"data,omitempty"`
}

// Error returns the message with its code, which is what the CLI shows the owner.
func (e *Error) Error() string {
	return fmt.Sprintf("%s (JSON-RPC error %d)", e.Message, e.Code)
}

// DecodeParams decodes a handler's params into v, refusing unknown fields and trailing data, so
// a typo in the CLI fails loudly instead of being ignored. Absent params leave v untouched. A
// failure is an *Error with code InvalidParams, ready to be returned by the handler.
func DecodeParams(params json.RawMessage, v any) error {
	if len(bytes.TrimSpace(params)) == 0 {
		return nil
	}
	dec := json.NewDecoder(bytes.NewReader(params))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return &Error{Code: InvalidParams, Message: "invalid params: " + err.Error()}
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return &Error{Code: InvalidParams, Message: "invalid params: trailing data after the value"}
	}
	return nil
}
