package hatest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// Entry is a config entry of the integration: one MCP server Home Assistant's Assist takes
// tools from, with the OAuth token it holds for it (none for a server without auth).
type Entry struct {
	ha    *HomeAssistant
	Title string // the server's name, from its initialize answer
	URL   string // CONF_URL, as the user typed it
	// AuthorizationURL, TokenURL and Scope are what discovery found (CONF_AUTHORIZATION_URL,
	// CONF_TOKEN_URL, CONF_SCOPE); empty without auth.
	AuthorizationURL, TokenURL string
	Scope                      []string
	// ClientID is the client the token belongs to, as the server issued it.
	ClientID string

	impl *oauthImpl // nil without auth

	mu    sync.Mutex
	token Token
	// Reauth is what the last 401 said (AuthenticateHeader.from_header), once a reauth flow was
	// started; nil until then.
	Reauth *AuthenticateHeader
}

// Token is the OAuth token an entry keeps (its data["token"]).
type Token struct {
	AccessToken  string  `json:"access_token"`
	RefreshToken string  `json:"refresh_token,omitempty"`
	TokenType    string  `json:"token_type,omitempty"`
	ExpiresIn    int     `json:"expires_in"`
	ExpiresAt    float64 `json:"expires_at"` // Unix seconds, as time.time() + expires_in
}

// Token returns the token the entry holds now.
func (e *Entry) Token() Token {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.token
}

// accessToken is the token manager __init__.py builds (_create_token_manager):
// OAuth2Session.async_ensure_token_valid, then the access token. A token that expires within
// CLOCK_OUT_OF_SYNC_MAX_SEC is refreshed first, and the refreshed one kept.
func (e *Entry) accessToken(ctx context.Context) (string, error) {
	if e.impl == nil {
		return "", nil
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	now := e.ha.opts.Now()
	if e.token.ExpiresAt > unixSeconds(now.Add(clockSkew)) {
		return e.token.AccessToken, nil
	}
	refreshed, err := e.impl.refresh(ctx, e.token, now)
	if err != nil {
		// OAuth2TokenRequestReauthError: the coordinator raises ConfigEntryAuthFailed.
		return "", fmt.Errorf("%w: OAuth token request failed: %w", ErrAuthFailed, err)
	}
	e.token = refreshed
	return e.token.AccessToken, nil
}

func unixSeconds(t time.Time) float64 { return float64(t.UnixNano()) / 1e9 }

// Tool is one tool Home Assistant offers its conversation agent (ModelContextProtocolTool).
type Tool struct {
	Name, Title, Description string
	InputSchema              any
	// ReadOnly and Destructive are the server's hints, as _tool_annotations keeps them.
	ReadOnly, Destructive bool
}

// Refresh is the coordinator's update (_async_update_data), which Home Assistant runs at setup
// and every UpdateInterval: a fresh session lists the tools within Timeout. A 401 starts a
// reauth and is ErrAuthFailed.
func (e *Entry) Refresh(ctx context.Context) ([]Tool, error) {
	ctx, cancel := withTimeout(ctx)
	defer cancel()
	token, err := e.accessToken(ctx)
	if err != nil {
		return nil, err
	}
	s, _, err := e.ha.openSession(ctx, e.URL, token)
	if err != nil {
		return nil, e.updateFailed("error communicating with API", err)
	}
	defer s.Close()
	res, err := s.ListTools(ctx, nil)
	if err != nil {
		return nil, e.updateFailed("error communicating with API", s.fail(err))
	}
	tools := make([]Tool, 0, len(res.Tools))
	for _, t := range res.Tools {
		tool := Tool{Name: t.Name, Title: t.Title, Description: t.Description, InputSchema: t.InputSchema}
		if a := t.Annotations; a != nil {
			tool.ReadOnly = a.ReadOnlyHint
			tool.Destructive = a.DestructiveHint != nil && *a.DestructiveHint
		}
		tools = append(tools, tool)
	}
	return tools, nil
}

// ToolResult is what a tool call gives the conversation agent (llm.ToolResult): the call's
// result as the SDK dumps it, and whether it is an error.
type ToolResult struct {
	Data  map[string]any
	Error bool
}

// Text is the result's text content, joined.
func (r ToolResult) Text() string {
	var out []string
	content, _ := r.Data["content"].([]any)
	for _, c := range content {
		if m, ok := c.(map[string]any); ok && m["type"] == "text" {
			s, _ := m["text"].(string)
			out = append(out, s)
		}
	}
	return strings.Join(out, "\n")
}

// Call is ModelContextProtocolTool.async_call: a fresh session calls the tool within Timeout.
// A 401 starts a reauth and is ErrAuthFailed; any other failure is a HomeAssistantError.
func (e *Entry) Call(ctx context.Context, name string, args map[string]any) (ToolResult, error) {
	ctx, cancel := withTimeout(ctx)
	defer cancel()
	token, err := e.accessToken(ctx)
	if err != nil {
		return ToolResult{}, err
	}
	s, _, err := e.ha.openSession(ctx, e.URL, token)
	if err != nil {
		return ToolResult{}, e.callFailed(err)
	}
	defer s.Close()
	res, err := s.CallTool(ctx, &sdk.CallToolParams{Name: name, Arguments: args})
	if err != nil {
		return ToolResult{}, e.callFailed(s.fail(err))
	}
	raw, err := json.Marshal(res)
	if err != nil {
		return ToolResult{}, err
	}
	var data map[string]any
	if err := json.Unmarshal(raw, &data); err != nil {
		return ToolResult{}, err
	}
	return ToolResult{Data: data, Error: res.IsError}, nil
}

func (e *Entry) callFailed(err error) error {
	if e.unauthorized(err) {
		return fmt.Errorf("%w: %w", ErrAuthFailed, err)
	}
	if errors.Is(err, context.DeadlineExceeded) {
		return fmt.Errorf("timeout when calling tool: %w", err)
	}
	return fmt.Errorf("error when calling tool: %w", err)
}

func (e *Entry) updateFailed(what string, err error) error {
	if e.unauthorized(err) {
		return fmt.Errorf("%w: %w", ErrAuthFailed, err)
	}
	if errors.Is(err, context.DeadlineExceeded) {
		return fmt.Errorf("timeout when listing tools: %w", err)
	}
	return fmt.Errorf("%s: %w", what, err)
}

// unauthorized reports whether err is a 401, and if so starts a reauth with what its
// WWW-Authenticate said (config_entry.async_start_reauth(data={"auth_header": …})).
func (e *Entry) unauthorized(err error) bool {
	var se *StatusError
	if !errors.As(err, &se) || se.Code != http.StatusUnauthorized {
		return false
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	e.Reauth = authenticateHeader(e.URL, se.Header)
	if e.Reauth == nil {
		e.Reauth = &AuthenticateHeader{}
	}
	return true
}
