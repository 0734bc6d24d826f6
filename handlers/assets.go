package handlers

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io/fs"
	"net/http"
	"path"
	"strings"
	"time"
)

// Assets serves the embedded static files under /static/. Each URL carries a hash of the file's
// content (?v=…), so the answer can be cached for a year and still never be stale.
type Assets struct {
	files map[string]asset
}

type asset struct {
	content     []byte
	version     string
	contentType string
}

// NewAssets reads every file at the root of fsys.
func NewAssets(fsys fs.FS) (*Assets, error) {
	entries, err := fs.ReadDir(fsys, ".")
	if err != nil {
		return nil, fmt.Errorf("static files: %w", err)
	}
	a := &Assets{files: map[string]asset{}}
	for _, e := range entries {
		if e.IsDir() {
			continue
		}
		b, err := fs.ReadFile(fsys, e.Name())
		if err != nil {
			return nil, fmt.Errorf("static files: %w", err)
		}
		sum := sha256.Sum256(b)
		a.files[e.Name()] = asset{content: b, version: hex.EncodeToString(sum[:6]), contentType: contentType(e.Name())}
	}
	return a, nil
}

func contentType(name string) string {
	switch path.Ext(name) {
	case ".js":
		return "text/javascript; charset=utf-8"
	case ".css":
		return "text/css; charset=utf-8"
	case ".svg":
		return "image/svg+xml"
	case ".png":
		return "image/png"
	case ".webmanifest":
		return "application/manifest+json"
	}
	return "text/plain; charset=utf-8"
}

// URL returns the versioned URL of a static file, for templates.
func (a *Assets) URL(name string) string {
	f, ok := a.files[name]
	if !ok {
		return "/static/" + name
	}
	return "/static/" + name + "?v=" + f.version
}

// ServeHTTP serves one static file.
func (a *Assets) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	a.serve(w, r, strings.TrimPrefix(r.URL.Path, "/static/"))
}

// File serves the static file name at a URL of its own, such as the service worker at /sw.js:
// browsers fetch it by that fixed URL, so it is never cached without asking again.
func (a *Assets) File(name string) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { a.serve(w, r, name) })
}

func (a *Assets) serve(w http.ResponseWriter, r *http.Request, name string) {
	f, ok := a.files[name]
	if !ok {
		http.NotFound(w, r)
		return
	}
	h := w.Header()
	h.Set("Content-Type", f.contentType)
	h.Set("ETag", `"`+f.version+`"`)
	if r.URL.Query().Get("v") == f.version {
		h.Set("Cache-Control", "public, max-age=31536000, immutable")
	} else {
		h.Set("Cache-Control", "no-cache")
	}
	http.ServeContent(w, r, name, time.Time{}, bytes.NewReader(f.content))
}
