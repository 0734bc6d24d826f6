// Package config parses and validates Maven's JSON config file.
//
// Parsing is strict on purpose: the file decides which commands may ever be proposed and which
// servers are dialled, so an unknown key, a duplicate key or a value of the wrong kind is an
// error that names the key, never something silently ignored; every error of a file is reported
// at once (Errors). The mcpServers block takes the shape other MCP clients use, so a block can be
// pasted as is: comments and trailing commas, VS Code's "servers" and Zed's "context_servers",
// other clients' names for Maven's keys, and keys that mean nothing here are accepted, each with
// a warning (Config.Warnings), and never grant anything. A server's values may take the daemon's
// environment, ${VAR}, ${VAR:-default} or ${env:VAR}, substituted when the file is read, and
// refer to sealed secrets as ${secret:NAME}, substituted only once the vault is open and never on
// a command line.
package config

import (
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"net"
	"net/netip"
	"net/url"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"
)

// Defaults, as docs/design.md#config states them.
const (
	DefaultListen          = "127.0.0.1:8080"
	DefaultRPID            = "localhost"
	DefaultRefreshInterval = 5 * time.Minute
	DefaultStepUpWindow    = 5 * time.Minute
)

// Limits on durations and names.
const (
	MinRefreshInterval = time.Second
	MaxStepUpWindow    = time.Hour
	MaxNameLen         = 64 // characters in a tool or server name
)

// Config is the daemon's configuration.
type Config struct {
	Listen string // host:port of the web server
	RPID   string // WebAuthn relying party ID
	// Origins are the WebAuthn origins the browser may use. When the file leaves them out they
	// are "http://localhost:PORT" for the port of Listen.
	Origins         []string
	RefreshInterval time.Duration // how often MCP servers are asked for their tools
	StepUpWindow    time.Duration // how long a step-up assertion stays fresh
	TLSCert         string        // certificate file; set together with TLSKey or not at all
	TLSKey          string
	// TrustedProxies are the addresses whose forwarding headers are believed; a single address
	// is a prefix of full length.
	TrustedProxies []netip.Prefix
	// Metrics serves GET /metrics to holders of the metrics token (maven metrics-token).
	Metrics    bool
	Voice      Voice             // how utterances are heard
	Notify     Notify            // how the owner is told of a call waiting for approval
	Agents     Agents            // how agents' calls wait for the owner's approval
	Tools      []Tool            // local commands, proposed to the allowlist
	MCPServers map[string]Server // keyed by server name

	// Warnings are what the file holds that Maven accepted but that may not do what its
	// author expects (see Warning), in the order of the file's keys.
	Warnings []Warning

	// originsDerived records that Origins came from Listen, so SetListen can derive them again.
	originsDerived bool
}

// Tool is a local command from the config file. It is only ever proposed: the owner enables it
// on the /tools page.
type Tool struct {
	Name string   // the spoken and displayed name
	Argv []string // run with exec, never through a shell
}

// Default returns the configuration used when the file sets nothing.
func Default() Config {
	return Config{
		Listen:          DefaultListen,
		RPID:            DefaultRPID,
		Origins:         defaultOrigins(DefaultListen, false),
		RefreshInterval: DefaultRefreshInterval,
		StepUpWindow:    DefaultStepUpWindow,
		originsDerived:  true,
	}
}

// ParseEnv decodes and validates a config document, reading ${VAR} through getenv; keys it
// leaves out take their defaults. The error is Errors: every problem of the document, each an
// *Error naming the key at fault.
func ParseEnv(data []byte, getenv func(string) string) (Config, error) {
	d := &decoder{getenv: getenv}
	cfg, ok := d.decode(data)
	if ok {
		// After a syntax error there is nothing to validate; after the others, what validation
		// finds at a key already at fault is that fault again.
		for _, e := range cfg.validate() {
			if !reported(d.errs, e.Key) {
				d.errs = append(d.errs, e)
			}
		}
	}
	if err := errorsOf(d.errs); err != nil {
		return Config{}, err
	}
	cfg.Warnings = d.warns
	return cfg, nil
}

// reported reports whether errs has an error at key or at a key above or below it.
func reported(errs []*Error, key string) bool {
	for _, e := range errs {
		if e.Key == key || strings.HasPrefix(key, e.Key+".") || strings.HasPrefix(key, e.Key+"[") ||
			strings.HasPrefix(e.Key, key+".") || strings.HasPrefix(e.Key, key+"[") {
			return true
		}
	}
	return false
}

// Load reads and parses the file at path, reading ${VAR} through getenv. Its errors carry the
// path; a missing file still matches fs.ErrNotExist.
func Load(path string, getenv func(string) string) (Config, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		cause := err
		// The path is already in the message; keep only why it could not be read.
		var pe *fs.PathError
		if errors.As(err, &pe) {
			cause = pe.Err
		}
		return Config{}, &Error{File: path, Msg: "cannot read: " + cause.Error(), Err: err}
	}
	cfg, err := ParseEnv(data, getenv)
	var es Errors
	if errors.As(err, &es) {
		for _, e := range es {
			e.File = path
		}
	}
	return cfg, err
}

// SetListen replaces the listen address, for the --listen flag and MAVEN_LISTEN, which outrank
// the file. Origins that were derived from the old address are derived again.
func (c *Config) SetListen(addr string) error {
	if msg := checkListen(addr); msg != "" {
		return errorf("listen", msg)
	}
	c.Listen = addr
	if c.originsDerived {
		c.Origins = defaultOrigins(addr, c.TLSCert != "")
	}
	return nil
}

// validate checks the rules that do not depend on how the file was written; ParseEnv calls it.
// It names every key at fault.
func (c Config) validate() []*Error {
	var errs []*Error
	add := func(key, msg string) {
		if msg != "" {
			errs = append(errs, errorf(key, msg))
		}
	}
	listenMsg := checkListen(c.Listen)
	add("listen", listenMsg)
	rpMsg := checkRPID(c.RPID)
	add("rp_id", rpMsg)
	switch {
	case rpMsg != "" || (c.originsDerived && listenMsg != ""):
		// Origins are checked against rp_id, and derived from listen: that fault first.
	case c.originsDerived && !strings.EqualFold(c.RPID, DefaultRPID):
		// The derived origin is on localhost, which can never match another RP ID.
		add("origins", fmt.Sprintf("required when rp_id is not %q; list the origins the browser uses, such as [\"https://%s\"]", DefaultRPID, c.RPID))
	case len(c.Origins) == 0:
		add("origins", `expected at least one origin such as "https://maven.example"`)
	default:
		for i, o := range c.Origins {
			add(indexPath("origins", i), checkOrigin(o, c.RPID))
		}
	}
	if c.RefreshInterval < MinRefreshInterval {
		add("refresh_interval", "expected at least "+shortDuration(MinRefreshInterval)+", got "+shortDuration(c.RefreshInterval))
	}
	if c.StepUpWindow <= 0 || c.StepUpWindow > MaxStepUpWindow {
		add("step_up_window", "expected a duration above 0 and at most "+shortDuration(MaxStepUpWindow)+", got "+shortDuration(c.StepUpWindow))
	}
	if c.TLSCert != "" && c.TLSKey == "" {
		add("tls_key", "required when tls_cert is set")
	}
	if c.TLSKey != "" && c.TLSCert == "" {
		add("tls_cert", "required when tls_key is set")
	}
	for i, p := range c.TrustedProxies {
		switch {
		case !p.IsValid():
			add(indexPath("trusted_proxies", i), "expected an IP address or CIDR prefix")
		case p != p.Masked():
			add(indexPath("trusted_proxies", i), fmt.Sprintf("%s has bits set past the prefix length; did you mean %s?", p, p.Masked()))
		}
	}
	errs = append(errs, c.Notify.validate("notify")...)
	errs = append(errs, validateTools(c.Tools)...)
	for _, name := range slices.Sorted(maps.Keys(c.MCPServers)) {
		path := keyPath("mcpServers", name)
		if msg := checkName(name, "server name"); msg != "" {
			add(path, msg)
			continue
		}
		s := c.MCPServers[name]
		if s.Name != name {
			add(path, fmt.Sprintf("the server's Name is %q but it is listed as %q", s.Name, name))
			continue
		}
		errs = append(errs, s.validate(path)...)
	}
	return errs
}

// shortDuration writes d as the owner would, "1h" rather than time's "1h0m0s".
func shortDuration(d time.Duration) string {
	s := d.String()
	if strings.HasSuffix(s, "m0s") {
		s = s[:len(s)-2]
	}
	if strings.HasSuffix(s, "h0m") {
		s = s[:len(s)-2]
	}
	return s
}

func validateTools(tools []Tool) []*Error {
	var errs []*Error
	add := func(key, msg string) { errs = append(errs, errorf(key, msg)) }
	seen := make(map[string]int, len(tools))
	for i, t := range tools {
		path := indexPath("tools", i)
		if msg := checkName(t.Name, "tool name"); msg != "" {
			add(keyPath(path, "name"), msg)
		} else if j, dup := seen[t.Name]; dup {
			add(keyPath(path, "name"), fmt.Sprintf("%q is already the name of tools[%d]", t.Name, j))
		} else {
			seen[t.Name] = i
		}
		argvPath := keyPath(path, "argv")
		if len(t.Argv) == 0 {
			add(argvPath, "expected "+wantArgv)
			continue
		}
		switch t.Argv[0] {
		case "":
			add(indexPath(argvPath, 0), "expected a program name or path, got an empty string")
		case "mcp":
			// docs/design.md#rule-5: argv[0] "mcp" routes a row to the MCP manager, so a local
			// command that starts with it would be taken for an MCP tool.
			add(indexPath(argvPath, 0), `"mcp" is reserved for MCP rows (["mcp", server, tool]); a local command cannot start with it`)
		}
		for k, a := range t.Argv {
			if strings.ContainsRune(a, 0) {
				add(indexPath(argvPath, k), "must not contain a NUL byte")
			} else if strings.Contains(a, "${") {
				// It would be passed on literally, which is never what was meant.
				add(indexPath(argvPath, k), "variables and secret references are only expanded in mcpServers, not in local commands")
			}
		}
	}
	return errs
}

// checkName checks a tool or server name, returning "" if it is fine. Invisible and control
// characters are refused because the name is shown to the owner and spoken
// (docs/design.md#rule-25).
func checkName(name, what string) string {
	switch {
	case strings.TrimSpace(name) == "":
		return "expected a non-empty " + what
	case !utf8.ValidString(name):
		return "the " + what + " is not valid UTF-8"
	case utf8.RuneCountInString(name) > MaxNameLen:
		return fmt.Sprintf("the %s is longer than %d characters", what, MaxNameLen)
	}
	for _, r := range name {
		if unicode.IsControl(r) || unicode.In(r, unicode.Cf, unicode.Zl, unicode.Zp) {
			return fmt.Sprintf("the %s contains the control or invisible character %U", what, r)
		}
	}
	return ""
}

// checkListen checks a host:port listen address, returning "" if it is fine.
func checkListen(addr string) string {
	bad := fmt.Sprintf(`expected host:port such as "127.0.0.1:8080", got %s`, quoteValue(addr))
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return bad
	}
	if _, err := strconv.ParseUint(port, 10, 16); err != nil {
		return bad
	}
	if host == "" {
		return ""
	}
	if _, err := netip.ParseAddr(host); err == nil {
		return ""
	}
	if !validHostname(host) {
		return bad
	}
	return ""
}

// defaultOrigins derives the origin of a browser on this machine from the listen port.
func defaultOrigins(listen string, tls bool) []string {
	_, port, err := net.SplitHostPort(listen)
	if err != nil {
		return nil
	}
	// Served with tls_cert, the browser's origin is https: a derived http origin would never
	// match a ceremony.
	if tls {
		return []string{"https://localhost:" + port}
	}
	return []string{"http://localhost:" + port}
}

// checkRPID checks a WebAuthn RP ID, which is a bare domain name, returning "" if it is fine.
func checkRPID(id string) string {
	bad := fmt.Sprintf(`expected a domain name such as "localhost" or "maven.example", got %s`, quoteValue(id))
	if _, err := netip.ParseAddr(id); err == nil {
		return bad + " (WebAuthn does not accept an IP address)"
	}
	if !validHostname(id) {
		return bad
	}
	return ""
}

// validHostname reports whether s is a DNS name: dot-separated labels of letters, digits and
// hyphens.
func validHostname(s string) bool {
	if s == "" || len(s) > 253 {
		return false
	}
	for label := range strings.SplitSeq(s, ".") {
		if label == "" || len(label) > 63 || label[0] == '-' || label[len(label)-1] == '-' {
			return false
		}
		for _, c := range []byte(label) {
			if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-') {
				return false
			}
		}
	}
	return true
}

// checkOrigin checks a WebAuthn origin against the RP ID, returning "" if it is fine. Browsers
// send the origin as scheme://host[:port] and it is compared exactly, so a trailing slash or a
// path would make every passkey ceremony fail later with a vaguer error.
func checkOrigin(origin, rpID string) string {
	bad := fmt.Sprintf(`expected an origin such as "https://maven.example" (scheme and host, no path), got %s`, quoteValue(origin))
	u, err := url.Parse(origin)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.Hostname() == "" ||
		u.User != nil || u.Path != "" || u.RawQuery != "" || u.ForceQuery || u.Fragment != "" || u.Opaque != "" ||
		strings.HasSuffix(origin, "#") {
		return bad
	}
	host := strings.ToLower(u.Hostname())
	rp := strings.ToLower(rpID)
	if host != rp && !strings.HasSuffix(host, "."+rp) {
		return fmt.Sprintf("the host of %q is not rp_id %q or a subdomain of it", origin, rpID)
	}
	if u.Scheme == "http" && host != "localhost" && !strings.HasSuffix(host, ".localhost") {
		// Browsers offer WebAuthn only in a secure context.
		return fmt.Sprintf("%q must use https: browsers allow passkeys over plain http only on localhost", origin)
	}
	return ""
}

// parseProxy parses a trusted proxy, an IP address or a CIDR prefix, returning a message when it
// is not one.
func parseProxy(s string) (netip.Prefix, string) {
	bad := fmt.Sprintf(`expected an IP address or CIDR prefix such as "10.0.0.0/8", got %s`, quoteValue(s))
	if strings.Contains(s, "/") {
		p, err := netip.ParsePrefix(s)
		if err != nil {
			return netip.Prefix{}, bad
		}
		if p != p.Masked() {
			// 10.0.0.1/8 is probably a typo for either the address or the network: ask.
			return netip.Prefix{}, fmt.Sprintf("%q has bits set past the prefix length; did you mean %q?", s, p.Masked().String())
		}
		return p, ""
	}
	a, err := netip.ParseAddr(s)
	if err != nil || a.Zone() != "" {
		return netip.Prefix{}, bad
	}
	return netip.PrefixFrom(a, a.BitLen()), ""
}
