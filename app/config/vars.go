package config

import (
	"fmt"
	"regexp"
	"strings"
)

// Variables: a server's command, args, env values, cwd, url and headers may take values from the
// daemon's environment the way Claude Code's .mcp.json does, ${VAR} and ${VAR:-default}, and the
// way Cursor, Windsurf and VS Code write it, ${env:VAR}. They are substituted once, when the file
// is read, so the command line the owner approves is the one that runs (a changed value is a new
// command line, approved again). ${secret:NAME} is left for the vault. Other clients' variables
// (${input:…}, ${workspaceFolder}) are refused with what to write instead.

// varName is an environment variable's name.
var varName = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

// bareVar finds $VAR written without braces (Gemini CLI expands it; Maven does not).
var bareVar = regexp.MustCompile(`\$[A-Za-z_][A-Za-z0-9_]*`)

// foreignVars are other clients' variables, with what to write instead.
var foreignVars = map[string]string{
	"workspaceFolder":         "a daemon has no workspace: write the absolute path",
	"workspaceFolderBasename": "a daemon has no workspace: write the name",
	"userHome":                "write ${HOME}",
	"pathSeparator":           "write /",
	"/":                       "write /",
}

// expandVars returns s with the daemon's environment variables substituted, reporting at key
// every reference it cannot take. keep names the variables left as written: in command and
// args, those the server's own env defines, which the server expands itself (mcp-remote does,
// for a header it is given as an argument).
func (d *decoder) expandVars(s, key string, keep func(name string) bool) string {
	if m := bareVar.FindString(s); m != "" && !strings.Contains(s, "${") {
		d.warnf(key, fmt.Sprintf("%s is passed on as written; write ${%s} to take it from the daemon's environment", m, m[1:]))
	}
	var b strings.Builder
	for {
		i := strings.Index(s, "${")
		if i < 0 {
			b.WriteString(s)
			return b.String()
		}
		end := strings.IndexByte(s[i:], '}')
		if end < 0 {
			// An unterminated ${secret: is reported with the other secret references.
			b.WriteString(s)
			return b.String()
		}
		ref := s[i : i+end+1]
		b.WriteString(s[:i])
		s = s[i+end+1:]
		v, ok := d.resolveVar(ref, key, keep)
		if !ok {
			return ""
		}
		b.WriteString(v)
	}
}

// resolveVar returns what the reference ref ("${…}") stands for, and false after reporting it.
func (d *decoder) resolveVar(ref, key string, keep func(string) bool) (string, bool) {
	body := ref[2 : len(ref)-1]
	if strings.HasPrefix(body, "secret:") {
		return ref, true
	}
	name, def, hasDefault := strings.Cut(body, ":-")
	if rest, ok := strings.CutPrefix(name, "env:"); ok && !hasDefault {
		name = rest
	}
	switch {
	case strings.HasPrefix(body, "input:"):
		d.failf(key, fmt.Sprintf("%s is a value VS Code asks for in a prompt; Maven never prompts: seal it with `maven secret set NAME` and write ${secret:NAME}", quoteValue(ref)))
		return "", false
	case foreignVars[body] != "":
		d.failf(key, fmt.Sprintf("%s is another client's variable; %s", quoteValue(ref), foreignVars[body]))
		return "", false
	case !varName.MatchString(name):
		d.failf(key, fmt.Sprintf("%s is not a variable Maven knows: write ${VAR} or ${VAR:-default} (the daemon's environment) or ${secret:NAME}", quoteValue(ref)))
		return "", false
	case strings.Contains(def, "${"):
		d.failf(key, fmt.Sprintf("%s: a default cannot hold another variable", quoteValue(ref)))
		return "", false
	case keep != nil && keep(name):
		return ref, true
	}
	// As in a shell's ${VAR:-default}, a variable set to "" counts as unset.
	v := d.getenv(name)
	switch {
	case v == "" && hasDefault:
		v = def
	case v == "" && underHeaders(key):
		secret := strings.ToLower(name)
		d.failf(key, fmt.Sprintf("${%s} is not set in the daemon's environment; set it, or write ${%s:-default}, or, for a credential, seal it with `maven secret set %s` and write ${secret:%s}",
			name, name, secret, secret))
		return "", false
	case v == "":
		d.failf(key, fmt.Sprintf("${%s} is not set in the daemon's environment; set it, or write ${%s:-default}", name, name))
		return "", false
	}
	if strings.Contains(v, "${") {
		// It would be read as a reference, a secret's even, which the environment must not name.
		d.failf(key, fmt.Sprintf("the value of ${%s} holds \"${\"; set that value in the config itself", name))
		return "", false
	}
	return v, true
}
