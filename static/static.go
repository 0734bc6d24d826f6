// Package static holds the files the browser loads: Maven's stylesheet, its small WebAuthn glue
// script (maven.js), its page behaviour (pages.js), turning notifications on (push.js), the
// service worker that shows them (sw.js, served at /sw.js), the web app manifest and its icons
// (served at /manifest.webmanifest; how the PNGs were made is in VENDORED.md), and the vendored
// htmx (see VENDORED.md). They are embedded in the binary.
package static

import (
	"embed"
	"io/fs"
)

//go:embed htmx.min.js htmx.LICENSE maven.js pages.js push.js sw.js maven.css favicon.svg
//go:embed manifest.webmanifest icon-192.png icon-512.png apple-touch-icon.png
var files embed.FS

// FS returns the embedded static files, by name ("maven.css").
func FS() fs.FS { return files }
