package config

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"
)

// serverKeys are the keys of one server that Maven reads.
var serverKeys = []string{"type", "command", "args", "env", "cwd", "url", "headers", "oauth", "allow_tools", "disabled"}

// oauthKeys are the keys of a server's "oauth" object.
var oauthKeys = []string{"client_id", "client_secret", "scopes"}

// ignoredServerKeys are keys other clients write in a server's entry that mean nothing to Maven:
// each is accepted with a warning saying why it grants nothing.
var ignoredServerKeys = map[string]string{
	"autoApprove":      "Cline's tools to run without asking; Maven's tools are enabled on the /tools page, never by the config file",
	"alwaysAllow":      "Cline's tools to run without asking; Maven's tools are enabled on the /tools page, never by the config file",
	"disabledTools":    "Windsurf's tools to hide; a tool you never enable on /tools never runs",
	"includeTools":     "Gemini CLI's tool filter; Maven proposes every tool, and only those you enable on /tools run",
	"excludeTools":     "Gemini CLI's tool filter; a tool you never enable on /tools never runs",
	"trust":            "Gemini CLI's switch to skip confirmations; nothing in the config approves a tool",
	"timeout":          "another client's timeout; Maven bounds every dial and call itself",
	"description":      "a note for another client",
	"settings":         "Zed's settings for one of its extensions",
	"remote":           "Zed's remote-development switch",
	"dev":              "VS Code's development mode",
	"icon":             "a picture for another client",
	"authProviderType": "Gemini CLI's sign-in method",
}

// refusedServerKeys carry a meaning Maven cannot honour; quietly ignoring them would start a
// server without what it needs.
var refusedServerKeys = map[string]string{
	"envFile":       "reads the environment from a file, which Maven does not: list the variables under env (credentials as ${secret:NAME})",
	"headersHelper": "runs a command to make the headers, which Maven does not: seal the token with `maven secret set NAME` and write the header with ${secret:NAME}",
}

// transportAliases maps the spellings of "type" MCP clients write to a Transport.
var transportAliases = map[string]Transport{
	"stdio":           TransportStdio,
	"http":            TransportHTTP,
	"streamable-http": TransportHTTP,
	"streamableHttp":  TransportHTTP,
	"streamable_http": TransportHTTP,
	"sse":             TransportSSE,
}

// servers decodes one object of servers (mcpServers, or another client's name for it) into
// into, reporting a server listed twice across them.
func (d *decoder) servers(raw []byte, path string, into *map[string]Server) {
	if kind(raw) == '[' {
		d.failf(path, continueList(raw))
		return
	}
	obj, ok := d.object(raw, path)
	if !ok {
		return
	}
	if *into == nil {
		*into = make(map[string]Server, len(obj))
	}
	for _, name := range slices.Sorted(maps.Keys(obj)) {
		p := keyPath(path, name)
		if _, dup := (*into)[name]; dup {
			d.failf(p, fmt.Sprintf("the server %q is listed twice (in mcpServers and in another client's list); keep one", name))
			continue
		}
		s, ok := d.server(obj[name], p, name)
		if ok {
			(*into)[name] = s
		}
	}
}

// serverFields is a server's entry as written, before its transport is settled and its
// variables are substituted.
type serverFields struct {
	s       Server
	typ     string // "type", or another client's way of saying it
	typeKey string // the key typ came from
	url     string
	urlKey  string // "url", or another client's name for it
}

// server decodes one server; false when it has errors. Every error of the entry is reported,
// an unknown key's with the others; what a key whose value did not decode would make the rest
// say (a command of the wrong type is no command) is not.
func (d *decoder) server(raw []byte, path, name string) (Server, bool) {
	before := d.mark()
	obj, ok := d.object(raw, path)
	if !ok {
		return Server{}, false
	}
	f := serverFields{s: Server{Name: name}}
	var badValues []string // keys of this entry whose value did not decode
	for _, key := range slices.Sorted(maps.Keys(obj)) {
		mark := d.mark()
		d.serverKey(&f, obj[key], path, key)
		if d.failed(mark) && !d.errs[mark].unknown {
			badValues = append(badValues, keyPath(path, key))
		}
	}
	keysDone := d.mark()
	s := f.s
	s.URL = f.url
	if t, ok := d.transport(f, path); ok {
		s.Type = t
		s.TypeGuessed = f.typeKey == "" && t == TransportHTTP
	}
	d.substitute(&s, path)
	if !d.failed(before) {
		d.warnCommand(s, path)
		return s, true
	}
	// The rest of the entry is checked now: validate only sees the servers that decoded. A
	// transport that could not be settled was said why already.
	d.errs = append(d.errs[:keysDone], unrelated(d.errs[keysDone:], badValues)...)
	if s.Type == "" {
		badValues = append(badValues, keyPath(path, "type"))
	}
	for _, e := range unrelated(s.validate(path), badValues) {
		if !reported(d.errs[before:], e.Key) {
			d.fail(e)
		}
	}
	return Server{}, false
}

// unrelated returns the errors of errs at no key of keys, nor above or below one.
func unrelated(errs []*Error, keys []string) []*Error {
	var out []*Error
	for _, e := range errs {
		related := false
		for _, k := range keys {
			related = related || reported([]*Error{{Key: k}}, e.Key)
		}
		if !related {
			out = append(out, e)
		}
	}
	return out
}

// warnCommand warns of a stdio server's command that can never start (CommandProblem).
func (d *decoder) warnCommand(s Server, path string) {
	if s.Type != TransportStdio || s.Disabled {
		return
	}
	if msg := commandProblem(s.Command, s.Args, s.Cwd, d.getenv("PATH"), serverArgv); msg != "" {
		d.warnf(keyPath(path, "command"), msg)
	}
}

// serverKey decodes one member of a server's entry into f.
func (d *decoder) serverKey(f *serverFields, raw json.RawMessage, path, key string) {
	p := keyPath(path, key)
	s := &f.s
	switch key {
	case "type":
		f.typ, f.typeKey = d.str(raw, p, wantType), p
	case "command":
		if kind(raw) == '{' {
			d.zedCommand(s, raw, p)
			return
		}
		s.Command = d.str(raw, p, "a program name or path")
	case "args":
		s.Args = d.strs(raw, p, "a list of strings")
	case "env":
		s.Env = d.strMap(raw, p)
	case "cwd":
		s.Cwd = d.str(raw, p, "a directory path")
	case "url", "serverUrl", "httpUrl":
		if f.urlKey != "" {
			d.failf(p, fmt.Sprintf("both %s and %s give the server's URL; keep one", keyPath(path, f.urlKey), p))
			return
		}
		f.url, f.urlKey = d.str(raw, p, `a URL such as "https://example.com/mcp"`), key
		switch key {
		case "serverUrl":
			d.warnf(p, "read as url: it is Windsurf's name for it")
		case "httpUrl":
			d.warnf(p, `read as url with "type": "http": it is Gemini CLI's name for a streamable HTTP server's URL`)
			if f.typ == "" {
				f.typ, f.typeKey = "http", p
			}
		}
	case "headers":
		s.Headers = d.strMap(raw, p)
	case "oauth":
		s.OAuth = d.oauth(raw, p)
	case "allow_tools":
		s.AllowTools = d.strs(raw, p, "a list of tool names")
	case "disabled":
		s.Disabled = d.boolean(raw, p)
	case "transportType":
		// Cline's older name for type; its "http" meant streamable HTTP, as Maven's does.
		t := d.str(raw, p, wantType)
		d.warnf(p, "read as type: it is Cline's older name for it")
		if f.typeKey == "" || strings.HasSuffix(f.typeKey, "httpUrl") {
			f.typ, f.typeKey = t, p
		}
	case "enabled":
		// Zed's switch: off means what Maven's disabled means.
		on := d.boolean(raw, p)
		s.Disabled = s.Disabled || !on
		d.warnf(p, fmt.Sprintf("read as \"disabled\": %v: it is Zed's switch", !on))
	case "source":
		d.zedSource(raw, p)
	default:
		if why, ok := ignoredServerKeys[key]; ok {
			d.warnf(p, "ignored: "+why)
			return
		}
		if why, ok := refusedServerKeys[key]; ok {
			d.failf(p, key+" "+why)
			return
		}
		d.unknown(path, key, serverKeys)
	}
}

// oauth reads a pre-registered OAuth client: {"client_id", "client_secret", "scopes"}.
func (d *decoder) oauth(raw json.RawMessage, path string) *OAuth {
	obj, ok := d.object(raw, path)
	if !ok {
		return nil
	}
	o := &OAuth{}
	for _, key := range slices.Sorted(maps.Keys(obj)) {
		p := keyPath(path, key)
		switch key {
		case "client_id":
			o.ClientID = d.str(obj[key], p, "the client id the authorization server gave you")
		case "client_secret":
			o.ClientSecret = d.str(obj[key], p, `a client secret, best sealed: "${secret:NAME}"`)
		case "scopes":
			o.Scopes = d.strs(obj[key], p, `a list of scopes such as ["read"]`)
		default:
			d.unknown(path, key, oauthKeys)
		}
	}
	return o
}

// zedCommand reads the command object older Zed versions write: {"path", "args", "env"}.
func (d *decoder) zedCommand(s *Server, raw json.RawMessage, path string) {
	obj, _ := d.object(raw, path)
	for _, key := range slices.Sorted(maps.Keys(obj)) {
		p := keyPath(path, key)
		switch key {
		case "path":
			s.Command = d.str(obj[key], p, "a program name or path")
		case "args":
			s.Args = d.strs(obj[key], p, "a list of strings")
		case "env":
			s.Env = d.strMap(obj[key], p)
		default:
			d.unknown(path, key, []string{"path", "args", "env"})
		}
	}
	d.warnf(path, "read as command, args and env: it is the command object older Zed versions write")
}

// zedSource reads Zed's "source": a custom server is any other server; an extension's is run by
// Zed, which Maven cannot do.
func (d *decoder) zedSource(raw json.RawMessage, path string) {
	switch src := d.str(raw, path, `"custom"`); src {
	case "custom":
		d.warnf(path, `ignored: Zed's mark of a server it does not install itself`)
	case "extension":
		d.failf(path, `a Zed extension's server is started by Zed; give Maven its "command" (or "url") instead`)
	default:
		d.failf(path, `expected "custom", got `+quoteValue(src))
	}
}

// transport settles the server's transport from its type, or from whether it has a command or
// a URL, as other MCP clients do when type is left out (a url alone: see Server.TypeGuessed).
func (d *decoder) transport(f serverFields, path string) (Transport, bool) {
	if f.typeKey != "" {
		t, ok := transportAliases[f.typ]
		if ok {
			return t, true
		}
		msg := "expected " + wantType + ", got " + quoteValue(f.typ)
		for alias := range transportAliases {
			if strings.EqualFold(alias, f.typ) {
				msg += fmt.Sprintf(" (did you mean %q?)", alias)
				break
			}
		}
		d.failf(f.typeKey, msg)
		return "", false
	}
	switch {
	case f.s.Command != "" && f.url != "":
		d.failf(path, `expected either "command" (a local process) or "url" (a remote server), not both`)
	case f.s.Command != "":
		return TransportStdio, true
	case f.url != "":
		return TransportHTTP, true
	default:
		d.failf(path, `expected "command" (a local process) or "url" (a remote server)`)
	}
	return "", false
}

// substitute replaces the daemon's environment variables in s, refuses secrets on the command
// line, and warns of credentials the config holds in the clear.
func (d *decoder) substitute(s *Server, path string) {
	key := func(k string) string { return keyPath(path, k) }
	ownEnv := func(name string) bool { _, ok := s.Env[name]; return ok }
	s.Command = d.commandLineValue(s.Command, key("command"), ownEnv)
	for i, a := range s.Args {
		s.Args[i] = d.commandLineValue(a, indexPath(key("args"), i), ownEnv)
	}
	for _, k := range slices.Sorted(maps.Keys(s.Env)) {
		p := keyPath(key("env"), k)
		v := s.Env[k]
		d.sealNudge(p, k, v, "this credential is shown with the command line on /tools and kept with its approval", secretNameFor(k))
		s.Env[k] = d.expandVars(v, p, nil)
	}
	s.Cwd = d.expandVars(s.Cwd, key("cwd"), nil)
	s.URL = d.expandVars(s.URL, key("url"), nil)
	server := strings.ToLower(secretNameFor(s.Name))
	for _, k := range slices.Sorted(maps.Keys(s.Headers)) {
		p := keyPath(key("headers"), k)
		if v := s.Headers[k]; !strings.Contains(v, "${") {
			// A ${VAR} stays in the daemon's environment, out of the file, and is never shown.
			d.sealNudge(p, k, v, "this credential is kept in the clear in the config file", server+"_token")
		}
		s.Headers[k] = d.expandVars(s.Headers[k], p, nil)
	}
	if o := s.OAuth; o != nil {
		o.ClientID = d.expandVars(o.ClientID, keyPath(key("oauth"), "client_id"), nil)
		p := keyPath(key("oauth"), "client_secret")
		d.sealNudge(p, "client_secret", o.ClientSecret, "this client secret is kept in the clear in the config file", server+"_client_secret")
		o.ClientSecret = d.expandVars(o.ClientSecret, p, nil)
	}
}

// commandLineValue substitutes variables in the command or an argument, and refuses a secret
// there (docs/design.md#rule-22): a process's command line is readable by every local user, in
// /proc/PID/cmdline.
func (d *decoder) commandLineValue(v, key string, ownEnv func(string) bool) string {
	if refs, _ := findRefs(v); len(refs) > 0 {
		env := secretNameFor(refs[0].name)
		d.failf(key, fmt.Sprintf(`${secret:%s} would put the secret on the command line, which every local user can read; pass it through env instead ("env": {%q: "${secret:%s}"}), and if the program wants it as an argument, write ${%s} there: a variable the server's own env sets is left for the server to expand, as mcp-remote does`,
			refs[0].name, env, refs[0].name, env))
		return v
	}
	return d.expandVars(v, key, ownEnv)
}

// secretNameFor suggests an environment variable name for a secret's name, or the reverse:
// upper case, runs of anything else as _.
func secretNameFor(name string) string {
	var b strings.Builder
	for _, r := range strings.ToUpper(name) {
		if r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' {
			b.WriteRune(r)
		} else if !strings.HasSuffix(b.String(), "_") {
			b.WriteByte('_')
		}
	}
	return strings.Trim(b.String(), "_")
}
