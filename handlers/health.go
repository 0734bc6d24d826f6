package handlers

import (
	"encoding/json"
	"net/http"
)

// lockState is what /healthz reports (*vault.Gate).
type lockState interface{ Locked() bool }

// healthz answers 200 while the daemon serves, saying whether it is locked.
func healthz(lock lockState) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Cache-Control", "no-store")
		_ = json.NewEncoder(w).Encode(struct {
			Status string `json:"status"`
			Locked bool   `json:"locked"`
		}{"ok", lock.Locked()})
	}
}
