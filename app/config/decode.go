package config

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"net/netip"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"
)

// The document is decoded one object at a time into map[string]json.RawMessage, so an unknown
// or mistyped key can be reported with its full path, which encoding/json's
// DisallowUnknownFields cannot do.

// Keys accepted in each kind of object.
var (
	topKeys    = []string{"listen", "rp_id", "origins", "refresh_interval", "step_up_window", "tls_cert", "tls_key", "trusted_proxies", "metrics", "voice", "tools", "mcpServers"}
	toolKeys   = []string{"name", "argv"}
	serverKeys = []string{"type", "command", "args", "env", "cwd", "url", "headers", "allow_tools", "disabled"}
)

// Descriptions of expected values, shared by decoding and validation.
const (
	wantDuration = `a duration such as "5m"`
	wantArgv     = "a non-empty list of strings"
	wantType     = `one of "stdio", "http", "sse"`
)

var utf8BOM = []byte("\xef\xbb\xbf")

// decode turns data into a Config with defaults applied, checking syntax, duplicate keys,
// unknown keys and value types; Validate checks the rest.
func decode(data []byte) (Config, error) {
	// Editors on some systems prepend a byte order mark; it is not JSON but means no harm.
	data = bytes.TrimPrefix(data, utf8BOM)
	if len(bytes.TrimSpace(data)) == 0 {
		return Config{}, errorf("", "the file is empty; write {} to use the defaults")
	}
	if err := checkSyntax(data); err != nil {
		return Config{}, err
	}
	if err := checkDuplicates(data); err != nil {
		return Config{}, err
	}
	top, err := decodeObject(data, "", topKeys)
	if err != nil {
		return Config{}, err
	}
	cfg := Default()
	for _, key := range topKeys {
		raw, ok := top.members[key]
		if !ok {
			continue
		}
		var err error
		switch key {
		case "listen":
			cfg.Listen, err = decodeString(raw, key, `an address such as "127.0.0.1:8080"`)
		case "rp_id":
			cfg.RPID, err = decodeString(raw, key, `a domain name such as "localhost"`)
		case "origins":
			cfg.Origins, err = decodeStrings(raw, key, `a list of origins such as ["https://maven.example"]`)
			cfg.originsDerived = false
		case "refresh_interval":
			cfg.RefreshInterval, err = decodeDuration(raw, key)
		case "step_up_window":
			cfg.StepUpWindow, err = decodeDuration(raw, key)
		case "tls_cert":
			cfg.TLSCert, err = decodeString(raw, key, "a file path")
		case "tls_key":
			cfg.TLSKey, err = decodeString(raw, key, "a file path")
		case "trusted_proxies":
			cfg.TrustedProxies, err = decodeProxies(raw, key)
		case "metrics":
			cfg.Metrics, err = decodeBool(raw, key)
		case "voice":
			cfg.Voice, err = decodeVoice(raw, key)
		case "tools":
			cfg.Tools, err = decodeTools(raw, key)
		case "mcpServers":
			cfg.MCPServers, err = decodeServers(raw, key)
		}
		if err != nil {
			return Config{}, err
		}
	}
	if cfg.originsDerived {
		cfg.Origins = defaultOrigins(cfg.Listen, cfg.TLSCert != "")
	}
	return cfg, nil
}

// checkSyntax reports invalid UTF-8 or JSON with the line and column an editor would show.
func checkSyntax(data []byte) error {
	if !utf8.Valid(data) {
		pos := 0
		for pos < len(data) {
			r, size := utf8.DecodeRune(data[pos:])
			if r == utf8.RuneError && size <= 1 {
				break
			}
			pos += size
		}
		line, col := lineCol(data, pos)
		return errorf("", fmt.Sprintf("line %d, column %d: invalid UTF-8", line, col))
	}
	var v any
	err := json.Unmarshal(data, &v)
	var syn *json.SyntaxError
	if errors.As(err, &syn) {
		// Offset counts the offending byte, except at the end of input.
		pos := int(syn.Offset) - 1
		if strings.HasPrefix(syn.Error(), "unexpected end") {
			pos = len(data)
		}
		line, col := lineCol(data, pos)
		return &Error{Msg: fmt.Sprintf("line %d, column %d: %s", line, col, syn.Error()), Err: err}
	}
	if err != nil {
		return &Error{Msg: err.Error(), Err: err}
	}
	return nil
}

// lineCol converts a byte offset into a 1-based line and a 1-based column counted in
// characters.
func lineCol(data []byte, pos int) (line, col int) {
	pos = max(0, min(pos, len(data)))
	before := data[:pos]
	start := bytes.LastIndexByte(before, '\n') + 1
	return bytes.Count(before, []byte("\n")) + 1, utf8.RuneCount(before[start:]) + 1
}

// checkDuplicates walks the tokens of a syntactically valid document and reports the first key
// that occurs twice in one object: encoding/json would silently keep the last one.
func checkDuplicates(data []byte) error {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	return walkDuplicates(dec, "")
}

func walkDuplicates(dec *json.Decoder, path string) error {
	tok, err := dec.Token()
	if err != nil {
		return &Error{Msg: err.Error(), Err: err}
	}
	switch tok {
	case json.Delim('{'):
		seen := make(map[string]bool)
		for dec.More() {
			tok, err := dec.Token()
			if err != nil {
				return &Error{Msg: err.Error(), Err: err}
			}
			key, _ := tok.(string)
			p := keyPath(path, key)
			if seen[key] {
				return &Error{Key: p, Msg: fmt.Sprintf("duplicate key %q", p), keyInMsg: true}
			}
			seen[key] = true
			if err := walkDuplicates(dec, p); err != nil {
				return err
			}
		}
		_, err = dec.Token() // '}'
	case json.Delim('['):
		for i := 0; dec.More(); i++ {
			if err := walkDuplicates(dec, indexPath(path, i)); err != nil {
				return err
			}
		}
		_, err = dec.Token() // ']'
	}
	if err != nil {
		return &Error{Msg: err.Error(), Err: err}
	}
	return nil
}

// keyPath names the member key of the object at parent. Keys that are not plain words are
// quoted in brackets, so a server called "a.b" or one with spaces stays unambiguous.
func keyPath(parent, key string) string {
	if !plainKey(key) {
		return parent + "[" + strconv.Quote(key) + "]"
	}
	if parent == "" {
		return key
	}
	return parent + "." + key
}

func plainKey(key string) bool {
	if key == "" {
		return false
	}
	for _, r := range key {
		if r != '_' && r != '-' && !unicode.IsLetter(r) && !unicode.IsDigit(r) {
			return false
		}
	}
	return true
}

// indexPath names element i of the list at parent.
func indexPath(parent string, i int) string { return parent + "[" + strconv.Itoa(i) + "]" }

// object is one JSON object being decoded: its members by key.
type object struct {
	members map[string]json.RawMessage
}

// decodeObject decodes raw as an object. When allowed is not nil, every key must be in it.
func decodeObject(raw []byte, path string, allowed []string) (object, error) {
	if kind(raw) != '{' {
		return object{}, expected(path, "an object", raw)
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal(raw, &m); err != nil {
		return object{}, &Error{Key: path, Msg: err.Error(), Err: err}
	}
	if allowed != nil {
		for _, key := range sortedKeys(m) {
			if !slices.Contains(allowed, key) {
				p := keyPath(path, key)
				return object{}, &Error{Key: p, Msg: fmt.Sprintf("unknown key %q", p) + hint(key, allowed), keyInMsg: true}
			}
		}
	}
	return object{members: m}, nil
}

// hint suggests what an unknown key was probably meant to be, "" when there is no good guess.
func hint(key string, allowed []string) string {
	norm := func(s string) string {
		return strings.ToLower(strings.NewReplacer("_", "", "-", "").Replace(s))
	}
	for _, a := range allowed {
		if norm(a) == norm(key) {
			return fmt.Sprintf(" (did you mean %q?)", a)
		}
	}
	switch {
	case key == "servers" && slices.Contains(allowed, "mcpServers"):
		return ` (did you mean "mcpServers"?)`
	case (key == "autoApprove" || key == "alwaysAllow") && slices.Contains(allowed, "allow_tools"):
		// Other clients use these to skip confirmation; Maven only trusts the /tools page.
		return " (tools are approved on the /tools page, never in the config file)"
	}
	return ""
}

// kind returns the first byte of a JSON value: '{', '[', '"', 't', 'f', 'n', or '0' for a
// number.
func kind(raw []byte) byte {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 {
		return 0
	}
	switch c := raw[0]; c {
	case '{', '[', '"', 't', 'f', 'n':
		return c
	}
	return '0'
}

// describe renders a JSON value for a "got …" message.
func describe(raw []byte) string {
	switch kind(raw) {
	case '{':
		return "an object"
	case '[':
		var elems []json.RawMessage
		if json.Unmarshal(raw, &elems) == nil && len(elems) == 0 {
			return "an empty list"
		}
		return "a list"
	case '"':
		var s string
		_ = json.Unmarshal(raw, &s)
		return quoteValue(s)
	}
	return truncate(string(bytes.TrimSpace(raw)))
}

// quoteValue quotes a string for an error message, shortened if long.
func quoteValue(s string) string {
	if s == "" {
		return "an empty string"
	}
	return strconv.Quote(truncate(s))
}

func truncate(s string) string {
	const maxRunes = 60
	if utf8.RuneCountInString(s) <= maxRunes {
		return s
	}
	return string([]rune(s)[:maxRunes]) + "…"
}

// expected builds the error for a value of the wrong kind.
func expected(path, what string, raw []byte) *Error {
	return errorf(path, "expected "+what+", got "+describe(raw))
}

func decodeString(raw []byte, path, what string) (string, error) {
	if kind(raw) != '"' {
		return "", expected(path, what, raw)
	}
	var s string
	if err := json.Unmarshal(raw, &s); err != nil {
		return "", &Error{Key: path, Msg: err.Error(), Err: err}
	}
	return s, nil
}

func decodeStrings(raw []byte, path, what string) ([]string, error) {
	if kind(raw) != '[' {
		return nil, expected(path, what, raw)
	}
	var elems []json.RawMessage
	if err := json.Unmarshal(raw, &elems); err != nil {
		return nil, &Error{Key: path, Msg: err.Error(), Err: err}
	}
	out := make([]string, 0, len(elems))
	for i, e := range elems {
		s, err := decodeString(e, indexPath(path, i), "a string")
		if err != nil {
			return nil, err
		}
		out = append(out, s)
	}
	return out, nil
}

func decodeStringMap(raw []byte, path string) (map[string]string, error) {
	obj, err := decodeObject(raw, path, nil)
	if err != nil {
		return nil, err
	}
	out := make(map[string]string, len(obj.members))
	for _, k := range sortedKeys(obj.members) {
		s, err := decodeString(obj.members[k], keyPath(path, k), "a string")
		if err != nil {
			return nil, err
		}
		out[k] = s
	}
	return out, nil
}

func decodeBool(raw []byte, path string) (bool, error) {
	switch kind(raw) {
	case 't':
		return true, nil
	case 'f':
		return false, nil
	}
	return false, expected(path, "true or false", raw)
}

func decodeDuration(raw []byte, path string) (time.Duration, error) {
	s, err := decodeString(raw, path, wantDuration)
	if err != nil {
		return 0, err
	}
	d, err := time.ParseDuration(s)
	if err != nil {
		return 0, &Error{Key: path, Msg: "expected " + wantDuration + ", got " + quoteValue(s), Err: err}
	}
	return d, nil
}

func decodeProxies(raw []byte, path string) ([]netip.Prefix, error) {
	strs, err := decodeStrings(raw, path, `a list of IP addresses or CIDR prefixes such as ["10.0.0.0/8"]`)
	if err != nil {
		return nil, err
	}
	out := make([]netip.Prefix, 0, len(strs))
	for i, s := range strs {
		p, msg := parseProxy(s)
		if msg != "" {
			return nil, errorf(indexPath(path, i), msg)
		}
		out = append(out, p)
	}
	return out, nil
}

func decodeTools(raw []byte, path string) ([]Tool, error) {
	if kind(raw) != '[' {
		return nil, expected(path, `a list of tools such as [{"name": "…", "argv": ["…"]}]`, raw)
	}
	var elems []json.RawMessage
	if err := json.Unmarshal(raw, &elems); err != nil {
		return nil, &Error{Key: path, Msg: err.Error(), Err: err}
	}
	tools := make([]Tool, 0, len(elems))
	for i, e := range elems {
		p := indexPath(path, i)
		obj, err := decodeObject(e, p, toolKeys)
		if err != nil {
			return nil, err
		}
		var t Tool
		if raw, ok := obj.members["name"]; ok {
			if t.Name, err = decodeString(raw, keyPath(p, "name"), "a tool name"); err != nil {
				return nil, err
			}
		}
		if raw, ok := obj.members["argv"]; ok {
			if t.Argv, err = decodeStrings(raw, keyPath(p, "argv"), wantArgv); err != nil {
				return nil, err
			}
		}
		tools = append(tools, t)
	}
	return tools, nil
}

func decodeServers(raw []byte, path string) (map[string]Server, error) {
	obj, err := decodeObject(raw, path, nil)
	if err != nil {
		return nil, err
	}
	servers := make(map[string]Server, len(obj.members))
	for _, name := range sortedKeys(obj.members) {
		s, err := decodeServer(obj.members[name], keyPath(path, name), name)
		if err != nil {
			return nil, err
		}
		servers[name] = s
	}
	return servers, nil
}

func decodeServer(raw []byte, path, name string) (Server, error) {
	obj, err := decodeObject(raw, path, serverKeys)
	if err != nil {
		return Server{}, err
	}
	s := Server{Name: name}
	typ, hasType := "", false
	for _, key := range serverKeys {
		raw, ok := obj.members[key]
		if !ok {
			continue
		}
		p := keyPath(path, key)
		var err error
		switch key {
		case "type":
			typ, err = decodeString(raw, p, wantType)
			hasType = true
		case "command":
			s.Command, err = decodeString(raw, p, "a program name or path")
		case "args":
			s.Args, err = decodeStrings(raw, p, "a list of strings")
		case "env":
			s.Env, err = decodeStringMap(raw, p)
		case "cwd":
			s.Cwd, err = decodeString(raw, p, "a directory path")
		case "url":
			s.URL, err = decodeString(raw, p, `a URL such as "https://example.com/mcp"`)
		case "headers":
			s.Headers, err = decodeStringMap(raw, p)
		case "allow_tools":
			s.AllowTools, err = decodeStrings(raw, p, "a list of tool names")
		case "disabled":
			s.Disabled, err = decodeBool(raw, p)
		}
		if err != nil {
			return Server{}, err
		}
	}
	if hasType {
		t, ok := transportAliases[typ]
		if !ok {
			return Server{}, errorf(keyPath(path, "type"), "expected "+wantType+", got "+quoteValue(typ))
		}
		s.Type = t
		return s, nil
	}
	// Other MCP clients leave "type" out and let command or url say which transport is meant.
	switch {
	case s.Command != "" && s.URL != "":
		return Server{}, errorf(path, `expected either "command" (a local process) or "url" (a remote server), not both`)
	case s.Command != "":
		s.Type = TransportStdio
	case s.URL != "":
		s.Type = TransportHTTP
	default:
		return Server{}, errorf(path, `expected "command" (a local process) or "url" (a remote server)`)
	}
	return s, nil
}

// transportAliases maps the spellings of "type" other MCP clients write to a Transport.
var transportAliases = map[string]Transport{
	"stdio":           TransportStdio,
	"http":            TransportHTTP,
	"streamable-http": TransportHTTP,
	"streamableHttp":  TransportHTTP,
	"sse":             TransportSSE,
}

// sortedKeys returns the keys of m in order, so that errors are deterministic.
func sortedKeys[V any](m map[string]V) []string { return slices.Sorted(maps.Keys(m)) }
