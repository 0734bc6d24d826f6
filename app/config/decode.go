package config

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"net/netip"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/tailscale/hujson"
)

// The document is decoded one object at a time into map[string]json.RawMessage, so an unknown
// or mistyped key can be reported with its full path, which encoding/json's
// DisallowUnknownFields cannot do. The decoder collects every error and warning of the file
// instead of stopping at the first.

// Keys accepted at the top of the file and in a tool.
var (
	topKeys  = []string{"listen", "rp_id", "origins", "refresh_interval", "step_up_window", "tls_cert", "tls_key", "trusted_proxies", "metrics", "voice", "notify", "agents", "tools", "mcpServers"}
	toolKeys = []string{"name", "argv"}
)

// serverLists are the top-level keys that hold MCP servers: Maven's own, then VS Code's
// (.vscode/mcp.json) and Zed's (settings.json), so either file's block can be pasted as is.
var serverLists = map[string]string{
	"servers":         "VS Code's name for mcpServers",
	"context_servers": "Zed's name for mcpServers",
}

// foreignTopKeys are top-level keys other MCP clients write in the files their servers are
// copied from; they mean nothing to Maven and grant nothing.
var foreignTopKeys = map[string]string{
	"$schema":                  "a JSON schema reference",
	"inputs":                   "VS Code's prompts for values; Maven never prompts: seal a value with `maven secret set NAME` and write ${secret:NAME}",
	"globalShortcut":           "a Claude Desktop setting",
	"preferences":              "a Claude Desktop setting",
	"theme":                    "a setting of another client",
	"telemetry":                "a setting of another client",
	"isUsingBuiltInNodeForMcp": "a Claude Desktop setting",
	"mcp":                      "Gemini CLI's server allow and deny lists; Maven's tools are approved on the /tools page",
	"selectedAuthType":         "a Gemini CLI setting",
}

// Descriptions of expected values, shared by decoding and validation.
const (
	wantDuration = `a duration such as "5m"`
	wantArgv     = "a non-empty list of strings"
	wantType     = `one of "stdio", "http", "sse"`
)

var utf8BOM = []byte("\xef\xbb\xbf")

// decoder collects the errors and warnings of one document.
type decoder struct {
	getenv func(string) string
	errs   []*Error
	warns  []Warning
}

func (d *decoder) fail(e *Error)          { d.errs = append(d.errs, e) }
func (d *decoder) failf(key, msg string)  { d.fail(errorf(key, msg)) }
func (d *decoder) warnf(key, msg string)  { d.warns = append(d.warns, Warning{Key: key, Msg: msg}) }
func (d *decoder) failed(from int) bool   { return len(d.errs) > from }
func (d *decoder) mark() (errsBefore int) { return len(d.errs) }

// decode turns data into a Config with defaults applied, checking syntax, duplicate keys,
// unknown keys and value types; validate checks the rest. Comments and trailing commas are
// accepted (JSON with comments, as VS Code and Zed write it). It reports false when there is no
// document to validate further: it is empty, not JSON, or not an object.
func (d *decoder) decode(data []byte) (Config, bool) {
	// Editors on some systems prepend a byte order mark; it is not JSON but means no harm.
	data = bytes.TrimPrefix(data, utf8BOM)
	if len(bytes.TrimSpace(data)) == 0 {
		d.failf("", "the file is empty; write {} to use the defaults")
		return Config{}, false
	}
	std, err := standardize(data)
	if err != nil {
		err.Msg += yamlHint(data)
		d.fail(err)
		return Config{}, false
	}
	d.duplicates(std)
	top, ok := d.object(std, "")
	if !ok {
		return Config{}, false
	}
	cfg := Default()
	for _, key := range slices.Sorted(maps.Keys(top)) {
		raw := top[key]
		switch key {
		case "listen":
			cfg.Listen = d.str(raw, key, `an address such as "127.0.0.1:8080"`)
		case "rp_id":
			cfg.RPID = d.str(raw, key, `a domain name such as "localhost"`)
		case "origins":
			cfg.Origins = d.strs(raw, key, `a list of origins such as ["https://maven.example"]`)
			cfg.originsDerived = false
		case "refresh_interval":
			cfg.RefreshInterval = d.duration(raw, key)
		case "step_up_window":
			cfg.StepUpWindow = d.duration(raw, key)
		case "tls_cert":
			cfg.TLSCert = d.str(raw, key, "a file path")
		case "tls_key":
			cfg.TLSKey = d.str(raw, key, "a file path")
		case "trusted_proxies":
			cfg.TrustedProxies = d.proxies(raw, key)
		case "metrics":
			cfg.Metrics = d.boolean(raw, key)
		case "voice":
			cfg.Voice = d.voice(raw, key)
		case "notify":
			cfg.Notify = d.notify(raw, key)
		case "agents":
			cfg.Agents = d.agents(raw, key)
		case "tools":
			cfg.Tools = d.tools(raw, key)
			for i, t := range cfg.Tools {
				if len(t.Argv) > 0 {
					if msg := commandProblem(t.Argv[0], t.Argv[1:], "", d.getenv("PATH"), toolArgv); msg != "" {
						d.warnf(indexPath(keyPath(indexPath(key, i), "argv"), 0), msg)
					}
				}
			}
		case "mcpServers", "servers", "context_servers":
			if key != "mcpServers" {
				d.warnf(key, "read as mcpServers: it is "+serverLists[key])
			}
			d.servers(raw, key, &cfg.MCPServers)
		default:
			if why, ok := foreignTopKeys[key]; ok {
				d.warnf(key, "ignored: "+why)
				continue
			}
			if hint := topKeyHint(key, raw); hint != "" {
				d.fail(&Error{Key: key, Msg: fmt.Sprintf("unknown key %q", key) + hint, keyInMsg: true, unknown: true})
				continue
			}
			d.unknown("", key, topKeys)
		}
	}
	if cfg.originsDerived {
		cfg.Origins = defaultOrigins(cfg.Listen, cfg.TLSCert != "")
	}
	return cfg, true
}

// standardize checks the document's encoding and syntax, reporting a problem with the line and
// column an editor would show, and returns it as standard JSON: comments and trailing commas
// become spaces, so every offset stays where it was.
func standardize(data []byte) ([]byte, *Error) {
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
		return nil, errorf("", fmt.Sprintf("line %d, column %d: invalid UTF-8", line, col))
	}
	if json.Valid(data) {
		// Standard JSON already, as most configs are: HuJSON would give it back unchanged.
		return data, nil
	}
	std, err := hujson.Standardize(bytes.Clone(data))
	if err != nil {
		return nil, &Error{Msg: hujsonMessage(data, err), Err: err}
	}
	if json.Valid(std) {
		return std, nil
	}
	// Decoded only to find where the syntax error is: json.Valid says only whether there is one,
	// and decoding a valid document into interfaces costs a map per object for nothing.
	var v any
	err = json.Unmarshal(std, &v)
	var syn *json.SyntaxError
	if errors.As(err, &syn) {
		// Offset counts the offending byte, except at the end of input.
		pos := int(syn.Offset) - 1
		if strings.HasPrefix(syn.Error(), "unexpected end") {
			pos = len(std)
		}
		line, col := lineCol(std, pos)
		return nil, &Error{Msg: fmt.Sprintf("line %d, column %d: %s", line, col, syn.Error()), Err: err}
	}
	if err != nil {
		return nil, &Error{Msg: err.Error(), Err: err}
	}
	return std, nil
}

// hujsonPos is where hujson says a syntax error is; its column counts bytes.
var hujsonPos = regexp.MustCompile(`^hujson: line (\d+), column (\d+): (.*)$`)

// hujsonMessage is hujson's message for a syntax error in data, its column counted in
// characters, as an editor shows it.
func hujsonMessage(data []byte, err error) string {
	m := hujsonPos.FindStringSubmatch(err.Error())
	if m == nil {
		return strings.TrimPrefix(err.Error(), "hujson: ")
	}
	line, _ := strconv.Atoi(m[1])
	col, _ := strconv.Atoi(m[2])
	lines := bytes.SplitAfter(data, []byte("\n"))
	if line >= 1 && line <= len(lines) && col >= 1 && col-1 <= len(lines[line-1]) {
		col = utf8.RuneCount(lines[line-1][:col-1]) + 1
	}
	return fmt.Sprintf("line %d, column %d: %s", line, col, m[3])
}

// lineCol converts a byte offset into a 1-based line and a 1-based column counted in
// characters.
func lineCol(data []byte, pos int) (line, col int) {
	pos = max(0, min(pos, len(data)))
	before := data[:pos]
	start := bytes.LastIndexByte(before, '\n') + 1
	return bytes.Count(before, []byte("\n")) + 1, utf8.RuneCount(before[start:]) + 1
}

// duplicates walks the tokens of a syntactically valid document and reports every key that
// occurs twice in one object: encoding/json would silently keep the last one.
func (d *decoder) duplicates(data []byte) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	if err := d.walkDuplicates(dec, ""); err != nil {
		d.fail(&Error{Msg: err.Error(), Err: err})
	}
}

func (d *decoder) walkDuplicates(dec *json.Decoder, path string) error {
	tok, err := dec.Token()
	if err != nil {
		return err
	}
	switch tok {
	case json.Delim('{'):
		seen := make(map[string]bool)
		for dec.More() {
			tok, err := dec.Token()
			if err != nil {
				return err
			}
			key, _ := tok.(string)
			p := keyPath(path, key)
			if seen[key] {
				d.fail(&Error{Key: p, Msg: fmt.Sprintf("duplicate key %q", p), keyInMsg: true})
			}
			seen[key] = true
			if err := d.walkDuplicates(dec, p); err != nil {
				return err
			}
		}
		_, err = dec.Token() // '}'
	case json.Delim('['):
		for i := 0; dec.More(); i++ {
			if err := d.walkDuplicates(dec, indexPath(path, i)); err != nil {
				return err
			}
		}
		_, err = dec.Token() // ']'
	}
	return err
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

// object decodes raw as an object, reporting anything else.
func (d *decoder) object(raw []byte, path string) (map[string]json.RawMessage, bool) {
	if kind(raw) != '{' {
		d.fail(expected(path, "an object", raw))
		return nil, false
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal(raw, &m); err != nil {
		d.fail(&Error{Key: path, Msg: err.Error(), Err: err})
		return nil, false
	}
	return m, true
}

// unknown reports key, a member of the object at parent that is none of allowed, suggesting
// what it was probably meant to be.
func (d *decoder) unknown(parent, key string, allowed []string) {
	p := keyPath(parent, key)
	d.fail(&Error{Key: p, Msg: fmt.Sprintf("unknown key %q", p) + didYouMean(key, allowed), keyInMsg: true, unknown: true})
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

func (d *decoder) str(raw []byte, path, what string) string {
	if kind(raw) != '"' {
		d.fail(expected(path, what, raw))
		return ""
	}
	var s string
	if err := json.Unmarshal(raw, &s); err != nil {
		d.fail(&Error{Key: path, Msg: err.Error(), Err: err})
	}
	return s
}

func (d *decoder) strs(raw []byte, path, what string) []string {
	if kind(raw) != '[' {
		d.fail(expected(path, what, raw))
		return nil
	}
	var elems []json.RawMessage
	if err := json.Unmarshal(raw, &elems); err != nil {
		d.fail(&Error{Key: path, Msg: err.Error(), Err: err})
		return nil
	}
	out := make([]string, 0, len(elems))
	for i, e := range elems {
		out = append(out, d.str(e, indexPath(path, i), "a string"))
	}
	return out
}

func (d *decoder) strMap(raw []byte, path string) map[string]string {
	obj, ok := d.object(raw, path)
	if !ok {
		return nil
	}
	out := make(map[string]string, len(obj))
	for _, k := range slices.Sorted(maps.Keys(obj)) {
		out[k] = d.str(obj[k], keyPath(path, k), "a string")
	}
	return out
}

func (d *decoder) boolean(raw []byte, path string) bool {
	switch kind(raw) {
	case 't':
		return true
	case 'f':
		return false
	}
	d.fail(expected(path, "true or false", raw))
	return false
}

func (d *decoder) duration(raw []byte, path string) time.Duration {
	before := d.mark()
	s := d.str(raw, path, wantDuration)
	if d.failed(before) {
		return 0
	}
	v, err := time.ParseDuration(s)
	if err != nil {
		d.fail(&Error{Key: path, Msg: "expected " + wantDuration + ", got " + quoteValue(s), Err: err})
	}
	return v
}

func (d *decoder) proxies(raw []byte, path string) []netip.Prefix {
	strs := d.strs(raw, path, `a list of IP addresses or CIDR prefixes such as ["10.0.0.0/8"]`)
	out := make([]netip.Prefix, 0, len(strs))
	for i, s := range strs {
		p, msg := parseProxy(s)
		if msg != "" {
			d.failf(indexPath(path, i), msg)
			continue
		}
		out = append(out, p)
	}
	return out
}

func (d *decoder) tools(raw []byte, path string) []Tool {
	if kind(raw) != '[' {
		d.fail(expected(path, `a list of tools such as [{"name": "…", "argv": ["…"]}]`, raw))
		return nil
	}
	var elems []json.RawMessage
	if err := json.Unmarshal(raw, &elems); err != nil {
		d.fail(&Error{Key: path, Msg: err.Error(), Err: err})
		return nil
	}
	tools := make([]Tool, 0, len(elems))
	for i, e := range elems {
		p := indexPath(path, i)
		obj, ok := d.object(e, p)
		if !ok {
			tools = append(tools, Tool{})
			continue
		}
		var t Tool
		for _, key := range slices.Sorted(maps.Keys(obj)) {
			switch key {
			case "name":
				t.Name = d.str(obj[key], keyPath(p, key), "a tool name")
			case "argv":
				t.Argv = d.strs(obj[key], keyPath(p, key), wantArgv)
			default:
				d.unknown(p, key, toolKeys)
			}
		}
		tools = append(tools, t)
	}
	return tools
}
