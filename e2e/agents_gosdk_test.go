package e2e

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/auth"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/modelcontextprotocol/go-sdk/oauthex"
)

// goSDKJourney: go-sdk's client with its OAuth handler (auth.AuthorizationCodeHandler), which
// discovers Maven from the 401, registers, and has the owner's browser sign in; the same checks
// as the TypeScript SDK's, the list change through its ToolListChangedHandler.
func goSDKJourney(t *testing.T, w *peersWorld) {
	back := make(chan url.Values, 1)
	cb := httptest.NewServer(http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		select {
		case back <- r.URL.Query():
		default:
		}
		fmt.Fprint(rw, "<!doctype html><title>Back at the go-sdk client</title><p>Signed in.</p>")
	}))
	t.Cleanup(cb.Close)
	redirect := cb.URL + "/callback"
	var asked atomic.Int32
	h, err := auth.NewAuthorizationCodeHandler(&auth.AuthorizationCodeHandlerConfig{
		DynamicClientRegistrationConfig: &auth.DynamicClientRegistrationConfig{Metadata: &oauthex.ClientRegistrationMetadata{
			RedirectURIs: []string{redirect}, TokenEndpointAuthMethod: "none", ClientName: "go-sdk client",
			GrantTypes: []string{"authorization_code", "refresh_token"}}},
		RedirectURL: redirect,
		AuthorizationCodeFetcher: func(ctx context.Context, args *auth.AuthorizationArgs) (*auth.AuthorizationResult, error) {
			if asked.Add(1) > 1 {
				return nil, errors.New("the user does not sign in again") // after the revocation
			}
			w.consent(t, args.URL, granted("go")...)
			select {
			case q := <-back:
				return &auth.AuthorizationResult{Code: q.Get("code"), State: q.Get("state"), Iss: q.Get("iss")}, nil
			case <-ctx.Done():
				return nil, ctx.Err()
			}
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	changed := make(chan time.Time, 100) // when each list change came
	client := sdk.NewClient(&sdk.Implementation{Name: "go-sdk-client", Version: "test"}, &sdk.ClientOptions{
		ToolListChangedHandler: func(context.Context, *sdk.ToolListChangedRequest) {
			select {
			case changed <- time.Now():
			default:
			}
		},
	})
	ctx := withDeadline(t)
	cs, err := client.Connect(ctx, &sdk.StreamableClientTransport{Endpoint: w.m.URL("/mcp"), OAuthHandler: h}, nil)
	if err != nil {
		t.Fatalf("connect: %v", err)
	}
	t.Cleanup(func() { cs.Close() })

	if got := sdkNames(t, ctx, cs); !slices.Equal(got, granted("go")) {
		t.Fatalf("go-sdk lists %q, want %q", got, granted("go"))
	}
	if text, isErr := sdkCall(ctx, cs, "tasks_list_tasks"); isErr || text != "Two open tasks: buy milk, call Ann." {
		t.Errorf("the read-only call: %q (error %v)", text, isErr)
	}
	if text, _ := sdkCall(ctx, cs, "tasks_delete_task"); !speakable(text) || w.up.Calls("delete_task") != 0 {
		t.Errorf("the destructive call: %q; the server ran it %d times", text, w.up.Calls("delete_task"))
	}

	for len(changed) > 0 {
		<-changed
	}
	redefined := time.Now()
	w.redefine(t, "peek_go")
	// Each list change, listed again, until the list lacks the tool: that change must have come
	// within a second of the server's redefinition (docs/design.md#rule-27).
	for gone := false; !gone; {
		select {
		case at := <-changed:
			if gone = !slices.Contains(sdkNames(t, ctx, cs), "tasks_peek_go"); gone {
				if took := at.Sub(redefined); took > time.Second {
					t.Errorf("the list change without tasks_peek_go reached go-sdk %s after the redefinition", took)
				}
				t.Logf("the list change reached go-sdk %s after the redefinition", at.Sub(redefined).Round(time.Millisecond))
			}
		case <-time.After(actionTimeout):
			t.Fatalf("no list change without tasks_peek_go within %s of the redefinition", actionTimeout)
		}
	}

	ran := w.up.Calls("list_tasks")
	w.revokeNamed(t, "go-sdk client")
	// Its session ended with the revocation, and its token opens nothing: the call fails.
	if res, err := cs.CallTool(ctx, &sdk.CallToolParams{Name: "tasks_list_tasks"}); err == nil || w.up.Calls("list_tasks") != ran {
		t.Errorf("a call after the revocation: %+v, %v; the server ran %d more", res, err, w.up.Calls("list_tasks")-ran)
	}
}

func sdkNames(t *testing.T, ctx context.Context, cs *sdk.ClientSession) []string {
	t.Helper()
	res, err := cs.ListTools(ctx, nil)
	if err != nil {
		t.Fatalf("list tools: %v", err)
	}
	var out []string
	for _, tool := range res.Tools {
		out = append(out, tool.Name)
	}
	slices.Sort(out)
	return out
}

// sdkCall calls a tool without arguments; a failed call is ("", true).
func sdkCall(ctx context.Context, cs *sdk.ClientSession, name string) (string, bool) {
	res, err := cs.CallTool(ctx, &sdk.CallToolParams{Name: name})
	if err != nil {
		return "", true
	}
	var texts []string
	for _, c := range res.Content {
		if tc, ok := c.(*sdk.TextContent); ok {
			texts = append(texts, tc.Text)
		}
	}
	return strings.Join(texts, "\n"), res.IsError
}
