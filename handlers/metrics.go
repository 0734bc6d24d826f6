package handlers

import (
	"context"
	"net/http"
	"strconv"

	"github.com/go-chi/chi/v5"
	"github.com/go-chi/chi/v5/middleware"

	"maven/app/metrics"
)

// MetricsGauges reads the gauges (rows by state, server states, lock) at scrape time.
type MetricsGauges func(ctx context.Context) []metrics.Sample

// countRequests counts every request by route pattern (never the raw path, which would let a
// scanner create a series per URL) and status code.
func countRequests(reg *metrics.Registry) func(http.Handler) http.Handler {
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			ww := middleware.NewWrapResponseWriter(w, r.ProtoMajor)
			next.ServeHTTP(ww, r)
			route := "unmatched"
			if rc := chi.RouteContext(r.Context()); rc != nil && rc.RoutePattern() != "" {
				route = rc.RoutePattern()
			}
			status := ww.Status()
			if status == 0 {
				status = http.StatusOK
			}
			reg.Inc("maven_http_requests_total", "HTTP requests by route and status.",
				metrics.Label{Name: "route", Value: route}, metrics.Label{Name: "code", Value: strconv.Itoa(status)})
		})
	}
}

// metricsGet is GET /metrics, behind its own bearer token: the figures say which servers and
// tools exist, so they are not public.
func metricsGet(reg *metrics.Registry, tokens TokenChecker, gauges MetricsGauges) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if !tokens.Check(requestToken(r)) {
			w.Header().Set("WWW-Authenticate", `Bearer realm="maven metrics"`)
			http.Error(w, "missing or wrong metrics token", http.StatusUnauthorized)
			return
		}
		w.Header().Set("Content-Type", "text/plain; version=0.0.4; charset=utf-8")
		w.Header().Set("Cache-Control", "no-store")
		_ = reg.WriteText(w, gauges(r.Context()))
	}
}
