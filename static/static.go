// Package static holds the files the browser loads: Maven's stylesheet, its small WebAuthn glue
// script (maven.js), its page behaviour (pages.js), and the vendored htmx (see VENDORED.md).
// They are embedded in the binary.
package static

import (
	"embed"
	"io/fs"
)

//go:embed htmx.min.js htmx.LICENSE maven.js pages.js maven.css favicon.svg
var files embed.FS

// FS returns the embedded static files, by name ("maven.css").
func FS() fs.FS { return files }
