package mcp

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"maps"
	"slices"
	"strings"

	"maven/app/config"
	"maven/app/reveal"
)

// StdioCommand returns the exact command line of a stdio server as the owner is shown it, and
// its digest. cfg must be the configured server, never an Expanded copy: secret references stay
// as written, so no secret is shown or stored, and rotating a secret is not a new command line.
//
// display is the command and its arguments (quoted where a shell user would misread them or a
// character would hide), then one NAME=value line per environment variable, sorted, then the
// working directory. digest is "sha256:" + hex of the JSON of {command, args, env, cwd} (env
// keys sorted, as encoding/json writes maps): any change of these is a new command line.
func StdioCommand(cfg config.Server) (display, digest string) {
	var b strings.Builder
	b.WriteString(cfg.Target())
	for _, k := range slices.Sorted(maps.Keys(cfg.Env)) {
		b.WriteString("\n")
		b.WriteString(reveal.Arg(k))
		b.WriteString("=")
		b.WriteString(reveal.Arg(cfg.Env[k]))
	}
	if cfg.Cwd != "" {
		b.WriteString("\ncwd: ")
		b.WriteString(reveal.Arg(cfg.Cwd))
	}

	canon := struct {
		Command string            `json:"command"`
		Args    []string          `json:"args"`
		Env     map[string]string `json:"env"`
		Cwd     string            `json:"cwd"`
	}{cfg.Command, cfg.Args, cfg.Env, cfg.Cwd}
	// nil and empty are one command line.
	if canon.Args == nil {
		canon.Args = []string{}
	}
	if canon.Env == nil {
		canon.Env = map[string]string{}
	}
	data, err := json.Marshal(canon)
	if err != nil {
		// Strings, a slice and a map of strings always marshal.
		panic("mcp: marshal command line: " + err.Error())
	}
	sum := sha256.Sum256(data)
	return b.String(), "sha256:" + hex.EncodeToString(sum[:])
}
