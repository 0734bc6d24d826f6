package config

import (
	"errors"
	"fmt"
	"maps"
	"net/url"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"maven/app/reveal"
)

// Transport is how Maven talks to an MCP server.
type Transport string

// The transports. "streamable-http" and "streamableHttp" in a config file mean TransportHTTP.
const (
	TransportStdio Transport = "stdio" // a local process speaking on stdin and stdout
	TransportHTTP  Transport = "http"  // streamable HTTP
	TransportSSE   Transport = "sse"   // the older HTTP+SSE transport
)

// Server is one entry of mcpServers. String values marked below may hold ${secret:NAME}
// references; Expanded substitutes them once the vault is unlocked.
type Server struct {
	Name    string // the key it is listed under
	Type    Transport
	Command string            // stdio: the program; may hold secret references
	Args    []string          // stdio; may hold secret references
	Env     map[string]string // stdio: extra environment; values may hold secret references
	Cwd     string            // stdio: an absolute working directory, "" for the daemon's
	URL     string            // http, sse: the endpoint; may hold secret references
	Headers map[string]string // http, sse: values may hold secret references
	// AllowTools names the tools that may bind a spoken argument (docs/design.md#rule-15). It
	// approves nothing: tools are enabled only on the /tools page.
	AllowTools []string
	Disabled   bool // never dialled
	// TypeGuessed marks a url given without a type. Other clients read such a url differently
	// (Gemini CLI and Cline as SSE, Cursor as streamable HTTP); Maven does what the MCP spec's
	// backwards-compatibility section says: streamable HTTP (Type), and the older SSE transport
	// if the server refuses the POST with a 4xx. An explicit type is obeyed exactly.
	TypeGuessed bool
	// OAuth is a client registered with the server's authorization server ahead of time (http
	// and sse only); nil lets Maven register itself where the server allows it.
	OAuth *OAuth
}

// OAuth is a pre-registered OAuth client of one remote server (the "oauth" key).
type OAuth struct {
	ClientID     string
	ClientSecret string // "" for a public client; may hold secret references
	// Scopes, when set, are what Maven asks for instead of what the server advertises (a
	// step-up's scopes are still added).
	Scopes []string
}

// SecretRefs returns the names of the secrets the server refers to, sorted and without
// duplicates.
func (s Server) SecretRefs() []string {
	var names []string
	s.eachSecretValue("", func(_, v string) {
		refs, _ := findRefs(v)
		for _, r := range refs {
			names = append(names, r.name)
		}
	})
	slices.Sort(names)
	return slices.Compact(names)
}

// NeedsSecrets reports whether the server refers to any secret, and so stays locked until the
// vault is unlocked.
func (s Server) NeedsSecrets() bool { return len(s.SecretRefs()) > 0 }

// Expanded returns a copy of the server with every secret reference replaced by lookup(NAME),
// whose values it owns and zeroes (see Expand). The copy shares no slice or map with s. Errors
// are *Error values naming the key, and wrap ErrSecretNotSet when a secret is missing.
func (s Server) Expanded(lookup func(name string) ([]byte, bool)) (Server, error) {
	out := s
	out.Args = slices.Clone(s.Args)
	out.Env = maps.Clone(s.Env)
	out.Headers = maps.Clone(s.Headers)
	out.AllowTools = slices.Clone(s.AllowTools)
	if s.OAuth != nil {
		o := *s.OAuth
		o.Scopes = slices.Clone(o.Scopes)
		out.OAuth = &o
	}
	path := keyPath("mcpServers", s.Name)
	var firstErr error
	expand := func(key string, v string) string {
		if firstErr != nil {
			return v
		}
		x, err := Expand(v, lookup)
		if err != nil {
			var ce *Error
			if errors.As(err, &ce) {
				ce.Key = key
			}
			firstErr = err
		}
		return x
	}
	out.Command = expand(keyPath(path, "command"), s.Command)
	for i, a := range out.Args {
		out.Args[i] = expand(indexPath(keyPath(path, "args"), i), a)
	}
	for _, k := range slices.Sorted(maps.Keys(out.Env)) {
		out.Env[k] = expand(keyPath(keyPath(path, "env"), k), out.Env[k])
	}
	out.URL = expand(keyPath(path, "url"), s.URL)
	for _, k := range slices.Sorted(maps.Keys(out.Headers)) {
		out.Headers[k] = expand(keyPath(keyPath(path, "headers"), k), out.Headers[k])
	}
	if out.OAuth != nil {
		out.OAuth.ClientSecret = expand(keyPath(keyPath(path, "oauth"), "client_secret"), out.OAuth.ClientSecret)
	}
	if firstErr != nil {
		return Server{}, firstErr
	}
	return out, nil
}

// eachSecretValue calls fn with the key path (under path) and value of every string that may
// hold secret references, in a fixed order.
func (s Server) eachSecretValue(path string, fn func(key, value string)) {
	fn(keyPath(path, "command"), s.Command)
	for i, a := range s.Args {
		fn(indexPath(keyPath(path, "args"), i), a)
	}
	for _, k := range slices.Sorted(maps.Keys(s.Env)) {
		fn(keyPath(keyPath(path, "env"), k), s.Env[k])
	}
	fn(keyPath(path, "url"), s.URL)
	for _, k := range slices.Sorted(maps.Keys(s.Headers)) {
		fn(keyPath(keyPath(path, "headers"), k), s.Headers[k])
	}
	if s.OAuth != nil {
		fn(keyPath(keyPath(path, "oauth"), "client_secret"), s.OAuth.ClientSecret)
	}
}

// Target is what the owner is shown as the server's address (docs/design.md#rule-14): for stdio the
// command line, for http and sse the URL with its credentials masked. Secret references are
// shown as written: call it on the configured server, never on an Expanded copy, whose secrets
// in a path or an innocently named parameter would show.
func (s Server) Target() string {
	if s.Type == TransportStdio {
		return reveal.CommandLine(append([]string{s.Command}, s.Args...))
	}
	return redactURL(s.URL)
}

// redacted replaces a credential in a displayed URL.
const redacted = "***"

// redactURL masks the userinfo of a URL and the values of query parameters whose names look
// like credentials. It never returns an unparsable input, which could hold anything.
func redactURL(raw string) string {
	refs, msg := findRefs(raw)
	if msg != "" {
		return "(invalid URL)"
	}
	// net/url refuses "{" in userinfo, so references are parsed as placeholders and put back.
	placeholder := func(i int, _ string) string { return "maven-secret-ref-" + strconv.Itoa(i) + "-" }
	u, err := url.Parse(replaceRefs(raw, refs, placeholder))
	if err != nil || u.Host == "" {
		return "(invalid URL)"
	}
	var b strings.Builder
	b.WriteString(u.Scheme)
	b.WriteString("://")
	if u.User != nil {
		b.WriteString(redacted + "@")
	}
	b.WriteString(u.Host)
	b.WriteString(u.EscapedPath())
	if u.RawQuery != "" {
		b.WriteString("?")
		b.WriteString(redactQuery(u.RawQuery))
	}
	out := b.String()
	for i, r := range refs {
		out = strings.ReplaceAll(out, placeholder(i, ""), raw[r.start:r.end])
	}
	return out
}

// redactQuery masks the values of credential-like parameters, keeping everything else as
// written.
func redactQuery(q string) string {
	parts := strings.Split(q, "&")
	for i, p := range parts {
		k, _, hasValue := strings.Cut(p, "=")
		name, err := url.QueryUnescape(k)
		if err != nil {
			name = k
		}
		if hasValue && SecretLike(name) {
			parts[i] = k + "=" + redacted
		}
	}
	return strings.Join(parts, "&")
}

// secretWords are the fragments of parameter names that usually carry a credential. Matching
// fragments rather than whole names over-masks now and then (a "design" parameter), which only
// costs a display detail; under-masking would show a token.
var secretWords = []string{"token", "key", "secret", "passw", "pwd", "auth", "sig", "credential", "session", "jwt"}

// SecretLike reports whether a name (a query parameter, an environment variable, a header) looks
// like it carries a credential.
func SecretLike(name string) bool {
	n := strings.ToLower(name)
	for _, w := range secretWords {
		if strings.Contains(n, w) {
			return true
		}
	}
	return false
}

// urlHostPlaceholder stands in for secret references while a URL is checked.
const urlHostPlaceholder = "maven-secret-ref"

// validate checks one server; path is its key path ("mcpServers.NAME").
func (s Server) validate(path string) []*Error {
	var errs []*Error
	add := func(key, msg string) { errs = append(errs, errorf(key, msg)) }
	key := func(k string) string { return keyPath(path, k) }
	errs = append(errs, s.validateTransport(path)...)

	// Every value that may hold references must hold only well-formed ones, and none on the
	// command line, which every local user can read.
	s.eachSecretValue(path, func(p, v string) {
		if _, msg := findRefs(v); msg != "" {
			add(p, msg)
		} else if strings.ContainsRune(v, 0) {
			add(p, "must not contain a NUL byte")
		}
	})
	for _, p := range s.commandLineSecrets(path) {
		add(p, "a secret reference would put the secret on the command line, which every local user can read; pass it through env")
	}

	if s.Cwd != "" {
		switch {
		case strings.Contains(s.Cwd, refOpen):
			add(key("cwd"), "secret references are not expanded in cwd")
		case !filepath.IsAbs(s.Cwd):
			add(key("cwd"), "expected an absolute directory path, got "+quoteValue(s.Cwd))
		}
	}
	for _, k := range slices.Sorted(maps.Keys(s.Env)) {
		if !validEnvName(k) {
			add(keyPath(key("env"), k), "expected an environment variable name such as API_KEY")
		}
	}
	if s.URL != "" {
		if msg := checkServerURL(s.URL); msg != "" {
			add(key("url"), msg)
		}
	}
	for _, k := range slices.Sorted(maps.Keys(s.Headers)) {
		p := keyPath(key("headers"), k)
		if !validHeaderName(k) {
			add(p, "expected an HTTP header name such as Authorization")
			continue
		}
		if strings.ContainsFunc(s.Headers[k], func(r rune) bool { return r != '\t' && (r < ' ' || r == 0x7f) }) {
			add(p, "the value must not contain control characters")
		}
	}
	for i, t := range s.AllowTools {
		if t == "" {
			add(indexPath(key("allow_tools"), i), "expected a tool name, got an empty string")
		}
	}
	if s.OAuth != nil {
		errs = append(errs, s.OAuth.validate(key("oauth"))...)
	}
	return errs
}

// validate checks a pre-registered client: an id, and scopes that can be sent.
func (o OAuth) validate(path string) []*Error {
	var errs []*Error
	switch {
	case strings.TrimSpace(o.ClientID) == "":
		errs = append(errs, errorf(keyPath(path, "client_id"), "required: the client id the authorization server gave you"))
	case strings.Contains(o.ClientID, refOpen):
		errs = append(errs, errorf(keyPath(path, "client_id"), "a client id is not secret (it is sent in the browser's address bar); write it as is"))
	}
	for i, sc := range o.Scopes {
		// RFC 6749 section 3.3: a scope token is printable ASCII but for space, " and \.
		if sc == "" || strings.ContainsFunc(sc, func(r rune) bool { return r <= ' ' || r > '~' || r == '"' || r == '\\' }) {
			errs = append(errs, errorf(indexPath(keyPath(path, "scopes"), i), "expected a scope such as \"read\", got "+quoteValue(sc)))
		}
	}
	return errs
}

// validateTransport checks the server has the keys its transport needs, and none it ignores.
func (s Server) validateTransport(path string) []*Error {
	var errs []*Error
	add := func(key, msg string) { errs = append(errs, errorf(key, msg)) }
	key := func(k string) string { return keyPath(path, k) }
	var forbidden []string // keys set that the transport does not use
	switch s.Type {
	case TransportStdio:
		if s.Command == "" {
			add(key("command"), "required for a stdio server")
		}
		if s.URL != "" {
			forbidden = append(forbidden, "url")
		}
		if len(s.Headers) > 0 {
			forbidden = append(forbidden, "headers")
		}
		if s.OAuth != nil {
			forbidden = append(forbidden, "oauth")
		}
	case TransportHTTP, TransportSSE:
		if s.URL == "" {
			add(key("url"), fmt.Sprintf("required for an %s server", s.Type))
		}
		if s.Command != "" {
			forbidden = append(forbidden, "command")
		}
		if len(s.Args) > 0 {
			forbidden = append(forbidden, "args")
		}
		if len(s.Env) > 0 {
			forbidden = append(forbidden, "env")
		}
		if s.Cwd != "" {
			forbidden = append(forbidden, "cwd")
		}
	default:
		add(key("type"), "expected "+wantType+", got "+quoteValue(string(s.Type)))
	}
	for _, f := range forbidden {
		add(key(f), fmt.Sprintf("not allowed for a server of type %q", s.Type))
	}
	return errs
}

// commandLineSecrets returns the keys of the command and arguments that hold a secret
// reference. Reading the file refuses them with advice; this is the rule for a config built in
// code.
func (s Server) commandLineSecrets(path string) []string {
	var out []string
	if strings.Contains(s.Command, refOpen) {
		out = append(out, keyPath(path, "command"))
	}
	for i, a := range s.Args {
		if strings.Contains(a, refOpen) {
			out = append(out, indexPath(keyPath(path, "args"), i))
		}
	}
	return out
}

// checkServerURL checks the endpoint of an http or sse server, returning "" if it is fine.
func checkServerURL(raw string) string {
	refs, msg := findRefs(raw)
	if msg != "" {
		return msg
	}
	bad := `expected an absolute http or https URL such as "https://example.com/mcp", got ` + quoteValue(raw)
	u, err := url.Parse(replaceRefs(raw, refs, func(int, string) string { return urlHostPlaceholder }))
	if err != nil || u.Opaque != "" || u.Host == "" || u.Hostname() == "" {
		return bad
	}
	if u.Scheme != "http" && u.Scheme != "https" {
		return bad
	}
	if strings.Contains(u.Host, urlHostPlaceholder) {
		// The trust level shown to the owner depends on the host, so it must be visible.
		return "the host must be written out, not a secret reference"
	}
	if u.Fragment != "" || strings.Contains(raw, "#") {
		return "expected no #fragment: it is never sent to the server"
	}
	return ""
}

// validEnvName reports whether name is a portable environment variable name.
func validEnvName(name string) bool {
	if name == "" || name[0] >= '0' && name[0] <= '9' {
		return false
	}
	for _, c := range []byte(name) {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_') {
			return false
		}
	}
	return true
}

// validHeaderName reports whether name is an HTTP token (RFC 9110, section 5.6.2).
func validHeaderName(name string) bool {
	if name == "" {
		return false
	}
	for _, c := range []byte(name) {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || strings.IndexByte("!#$%&'*+-.^_`|~", c) >= 0) {
			return false
		}
	}
	return true
}

// SecretUsers maps the name of every secret the config refers to onto the servers that refer
// to it, sorted; the Home Assistant notifier's token is used by "notify.home_assistant".
func (c Config) SecretUsers() map[string][]string {
	users := map[string][]string{}
	for name, s := range c.MCPServers {
		for _, ref := range s.SecretRefs() {
			users[ref] = append(users[ref], name)
		}
	}
	for _, ref := range c.Notify.SecretRefs() {
		users[ref] = append(users[ref], homeAssistantUser)
	}
	for _, servers := range users {
		slices.Sort(servers)
	}
	return users
}
