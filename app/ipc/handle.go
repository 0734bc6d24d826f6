package ipc

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"runtime/debug"
)

// HandlerFunc answers one method. params is the raw "params" value, nil when the request has
// none. The returned result is marshalled with encoding/json; see the package doc for how errors
// reach the client. ctx is cancelled when the server closes.
type HandlerFunc func(ctx context.Context, params json.RawMessage) (any, error)

// nullID is the id of a reply to a request whose id could not be read.
var nullID = json.RawMessage("null")

// genericInternal is what the client sees for an error the handler did not mean to show.
const genericInternal = "internal error (details are in the daemon log)"

type response struct {
	JSONRPC string          `json:"jsonrpc"`
	ID      json.RawMessage `json:"id"`
	Result  json.RawMessage `json:"result,omitempty"`
	Error   *Error          `json:"error,omitempty"`
}

type request struct {
	id     json.RawMessage // nil for a notification
	method string
	params json.RawMessage
}

// handleLine answers one request line. It returns the reply without its trailing newline, or
// nil when nothing must be sent (a blank line or a notification). It never panics: a panicking
// handler becomes an InternalError.
func (s *Server) handleLine(ctx context.Context, line []byte) []byte {
	line = bytes.TrimSpace(line)
	if len(line) == 0 {
		return nil
	}
	req, rpcErr := parseRequest(line)
	if rpcErr != nil {
		return s.encode(req.id, nil, rpcErr)
	}
	h, ok := s.handlers[req.method]
	if !ok {
		if req.id == nil {
			s.logger.Debug("ipc: notification for unknown method", "method", req.method)
			return nil
		}
		return s.encode(req.id, nil, &Error{Code: MethodNotFound, Message: fmt.Sprintf("method %q not found", req.method)})
	}
	result, err := s.call(ctx, req.method, h, req.params)
	if err != nil {
		rpcErr = s.toRPCError(req.method, err)
	}
	if req.id == nil {
		return nil
	}
	return s.encode(req.id, result, rpcErr)
}

// parseRequest validates the shape of a request. On failure the returned request still carries
// the id to answer with: the client's id if it could be read, null otherwise.
func parseRequest(line []byte) (request, *Error) {
	bad := request{id: nullID}
	if !json.Valid(line) {
		return bad, &Error{Code: ParseError, Message: "parse error: the line is not valid JSON"}
	}
	switch line[0] {
	case '{':
	case '[':
		return bad, &Error{Code: InvalidRequest, Message: "batch requests are not supported"}
	default:
		return bad, &Error{Code: InvalidRequest, Message: "a request must be a JSON object"}
	}
	var members map[string]json.RawMessage
	if err := json.Unmarshal(line, &members); err != nil {
		return bad, &Error{Code: InvalidRequest, Message: "a request must be a JSON object"}
	}

	var req request
	if raw, ok := members["id"]; ok {
		id, ok := normalizeID(raw)
		if !ok {
			return bad, &Error{Code: InvalidRequest, Message: `"id" must be a string, a number or null`}
		}
		req.id = id
	}
	invalid := func(msg string) (request, *Error) {
		r := request{id: req.id}
		if r.id == nil {
			r.id = nullID // the spec wants invalid requests answered, even without an id
		}
		return r, &Error{Code: InvalidRequest, Message: msg}
	}

	var version string
	if err := json.Unmarshal(members["jsonrpc"], &version); err != nil || version != "2.0" {
		return invalid(`"jsonrpc" must be "2.0"`)
	}
	raw := bytes.TrimSpace(members["method"])
	if len(raw) == 0 || raw[0] != '"' || json.Unmarshal(raw, &req.method) != nil {
		return invalid(`"method" must be a string`)
	}
	if raw, ok := members["params"]; ok {
		raw = bytes.TrimSpace(raw)
		switch {
		case bytes.Equal(raw, nullID):
			// Treated as absent: some encoders write null for an unset field.
		case len(raw) > 0 && (raw[0] == '{' || raw[0] == '['):
			req.params = raw
		default:
			return invalid(`"params" must be an object or an array`)
		}
	}
	return req, nil
}

// normalizeID checks that raw is a valid id and returns it as it will be echoed. Strings are
// re-encoded so that invalid UTF-8 from the client is never echoed back verbatim.
func normalizeID(raw json.RawMessage) (json.RawMessage, bool) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 {
		return nil, false
	}
	switch c := raw[0]; {
	case c == 'n': // the line is valid JSON, so this is null
		return nullID, true
	case c == '-' || (c >= '0' && c <= '9'):
		return raw, true
	case c == '"':
		var s string
		if json.Unmarshal(raw, &s) != nil {
			return nil, false
		}
		b, err := json.Marshal(s)
		return b, err == nil
	}
	return nil, false
}

// call runs a handler, turning a panic into an error so one buggy method cannot take the daemon
// down.
func (s *Server) call(ctx context.Context, method string, h HandlerFunc, params json.RawMessage) (result any, err error) {
	defer func() {
		if r := recover(); r != nil {
			result, err = nil, fmt.Errorf("handler for %q panicked: %v\n%s", method, r, debug.Stack())
		}
	}()
	return h(ctx, params)
}

// toRPCError decides what the client sees for a handler error, logging the ones it hides.
func (s *Server) toRPCError(method string, err error) *Error {
	var rpcErr *Error
	if errors.As(err, &rpcErr) && rpcErr != nil {
		s.logger.Debug("ipc: method returned an error", "method", method, "err", err)
		return rpcErr
	}
	s.logger.Error("ipc: method failed", "method", method, "err", err)
	return &Error{Code: InternalError, Message: genericInternal}
}

// encode builds a reply. Either rpcErr is set, or result is marshalled as the result.
func (s *Server) encode(id json.RawMessage, result any, rpcErr *Error) []byte {
	resp := response{JSONRPC: "2.0", ID: id, Error: rpcErr}
	if rpcErr == nil {
		raw, err := json.Marshal(result)
		if err != nil {
			s.logger.Error("ipc: cannot encode result", "err", err)
			resp.Error = &Error{Code: InternalError, Message: genericInternal}
		} else {
			resp.Result = raw
		}
	}
	b, err := json.Marshal(resp)
	if err != nil {
		// Only a handler-supplied Error.Data can fail to marshal; send the error without it.
		s.logger.Error("ipc: cannot encode error data", "err", err)
		resp.Error = &Error{Code: resp.Error.Code, Message: resp.Error.Message}
		b, err = json.Marshal(resp)
		if err != nil {
			panic(fmt.Sprintf("ipc: cannot encode a plain error response: %v", err))
		}
	}
	return b
}
