package handlers

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"

	"github.com/go-chi/chi/v5"
)

// readJSON decodes r's body into v; anything malformed or too long is errBadRequest.
func readJSON(w http.ResponseWriter, r *http.Request, v any) error {
	body := http.MaxBytesReader(w, r.Body, maxJSONBody)
	dec := json.NewDecoder(body)
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil && err != io.EOF {
		return fmt.Errorf("%w: %w", errBadRequest, err)
	}
	return nil
}

// readEmpty reads a request that carries nothing: an empty JSON object.
func readEmpty(w http.ResponseWriter, r *http.Request) error { return readJSON(w, r, &struct{}{}) }

// readForm parses r's form, reading at most limit bytes of body; anything malformed or too long
// is errBadRequest.
func readForm(w http.ResponseWriter, r *http.Request, limit int64) error {
	r.Body = http.MaxBytesReader(w, r.Body, limit)
	if err := r.ParseForm(); err != nil {
		return errors.Join(errBadRequest, err)
	}
	return nil
}

// idParam reads the route's {id}; a malformed one is a page that does not exist.
func idParam(r *http.Request) (int64, error) {
	id, err := strconv.ParseInt(chi.URLParam(r, "id"), 10, 64)
	if err != nil || id <= 0 {
		return 0, errNoPage
	}
	return id, nil
}
