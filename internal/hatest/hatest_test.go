package hatest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// oauthServer is an MCP server at /mcp that answers every request 401, and an authorization
// server whose dynamic registration answers with registration (a JSON object's fields, after
// client_id and redirect_uris).
func oauthServer(t *testing.T, ha *HomeAssistant, registration string) *httptest.Server {
	t.Helper()
	mux := http.NewServeMux()
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	mux.HandleFunc("/mcp", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("WWW-Authenticate", `Bearer resource_metadata="`+srv.URL+`/.well-known/oauth-protected-resource"`)
		w.WriteHeader(http.StatusUnauthorized)
	})
	mux.HandleFunc("GET /.well-known/oauth-protected-resource", func(w http.ResponseWriter, r *http.Request) {
		json.NewEncoder(w).Encode(map[string]any{"resource": srv.URL + "/mcp", "authorization_servers": []string{srv.URL}})
	})
	mux.HandleFunc("GET /.well-known/oauth-authorization-server", func(w http.ResponseWriter, r *http.Request) {
		json.NewEncoder(w).Encode(map[string]any{"authorization_endpoint": srv.URL + "/authorize", "token_endpoint": srv.URL + "/token",
			"registration_endpoint": "/register", "token_endpoint_auth_methods_supported": []string{"client_secret_basic"}})
	})
	mux.HandleFunc("POST /register", func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusCreated)
		fmt.Fprintf(w, `{"client_id": "c1", "redirect_uris": [%q]%s}`, ha.RedirectURI(), registration)
	})
	return srv
}

// TestAnExpiringClientSecretAborts: as registration.py's _reject_expiring_client_secret, a
// registration whose secret expires aborts the flow (oauth_secret_expires); one that never
// expires (0, or no expiry said) goes on to the authorize step.
func TestAnExpiringClientSecretAborts(t *testing.T) {
	for name, tc := range map[string]struct {
		registration string
		abort        string
	}{
		"expires":       {`, "client_secret": "s", "client_secret_expires_at": 1893456000`, "oauth_secret_expires"},
		"never expires": {`, "client_secret": "s", "client_secret_expires_at": 0`, ""},
		"no expiry":     {`, "client_secret": "s"`, ""},
		"no secret":     {`, "client_secret_expires_at": 0`, "oauth_registration_failed"},
	} {
		t.Run(name, func(t *testing.T) {
			ha, err := New(Options{})
			if err != nil {
				t.Fatal(err)
			}
			defer ha.Close()
			srv := oauthServer(t, ha, tc.registration)
			flow, _, err := ha.AddIntegration(context.Background(), srv.URL+"/mcp")
			var a *Abort
			switch {
			case tc.abort == "" && (err != nil || flow == nil || flow.AuthorizeURL == ""):
				t.Errorf("the flow: %v, %v", flow, err)
			case tc.abort != "" && (!errors.As(err, &a) || a.Reason != tc.abort):
				t.Errorf("the flow: %v, want the abort %s", err, tc.abort)
			}
		})
	}
}

// TestSSEOnlyAfterA405: as coordinator.py's mcp_client, a server whose streamable HTTP POST is
// answered 405 is spoken to over SSE; one answered 404 is not tried over SSE (the form shows
// cannot_connect).
func TestSSEOnlyAfterA405(t *testing.T) {
	server := sdk.NewServer(&sdk.Implementation{Name: "legacy", Version: "1"}, nil)
	sdk.AddTool(server, &sdk.Tool{Name: "ping"}, func(context.Context, *sdk.CallToolRequest, struct{}) (*sdk.CallToolResult, any, error) {
		return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: "pong"}}}, nil, nil
	})
	sse := sdk.NewSSEHandler(func(*http.Request) *sdk.Server { return server }, nil)
	for name, status := range map[string]int{"405": http.StatusMethodNotAllowed, "404": http.StatusNotFound} {
		t.Run(name, func(t *testing.T) {
			var gets atomic.Int32
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if r.Method == http.MethodPost && !r.URL.Query().Has("sessionid") {
					w.WriteHeader(status)
					return
				}
				if r.Method == http.MethodGet {
					gets.Add(1)
				}
				sse.ServeHTTP(w, r)
			}))
			defer srv.Close()
			ha, err := New(Options{})
			if err != nil {
				t.Fatal(err)
			}
			defer ha.Close()
			_, entry, err := ha.AddIntegration(context.Background(), srv.URL)
			var fe *FormError
			if status == http.StatusNotFound {
				if !errors.As(err, &fe) || fe.Key != "cannot_connect" || gets.Load() != 0 {
					t.Errorf("after a 404: %v, %d GETs", err, gets.Load())
				}
				return
			}
			if err != nil || entry == nil || entry.Title != "legacy" {
				t.Fatalf("after a 405: %v, %v", entry, err)
			}
			if res, err := entry.Call(context.Background(), "ping", nil); err != nil || res.Text() != "pong" {
				t.Errorf("a call over SSE: %+v, %v", res, err)
			}
			if s := ha.Sessions(); s.SSE != 2 || s.Streamable != 0 {
				t.Errorf("sessions %+v, want 2 over SSE", s)
			}
		})
	}
}
