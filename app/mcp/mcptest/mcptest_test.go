package mcptest_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"maven/app/mcp/mcptest"
)

// A client that ends its session while the server's question is unanswered must not hang the
// server: go-sdk's ServerSession.Close waits for the call that asks, and that call waits for
// an answer the client will never send. The scripted server gives its questions up when the
// session's DELETE arrives, so a test server can always shut down (CI L hung 20 minutes in
// httptest.Server.Close on a voice test whose client ended the session mid-question).
func TestEndingASessionGivesUpItsQuestions(t *testing.T) {
	for _, c := range []struct {
		name string
		opts mcptest.Options
		call func(context.Context, *sdk.ClientSession) error
	}{
		{"a tool's question", mcptest.Options{Protocols: mcptest.Legacy}, func(ctx context.Context, cs *sdk.ClientSession) error {
			_, err := cs.CallTool(ctx, &sdk.CallToolParams{Name: "ask"})
			return err
		}},
		{"a question while listing", mcptest.Options{Protocols: mcptest.Legacy, ElicitOnList: json.RawMessage(`{"message":"Name?","requestedSchema":{"type":"object","properties":{"n":{"type":"string"}}}}`)},
			func(ctx context.Context, cs *sdk.ClientSession) error {
				_, err := cs.ListTools(ctx, nil)
				return err
			}},
	} {
		t.Run(c.name, func(t *testing.T) {
			scripted := mcptest.New(c.opts, mcptest.ToolSpec{Name: "ask", Elicit: json.RawMessage(`{"message":"Colour?","requestedSchema":{"type":"object","properties":{"colour":{"type":"string"}}}}`)})
			srv := httptest.NewServer(scripted.HTTPHandler())
			t.Cleanup(func() {
				if !t.Failed() { // else srv.Close would wait for the stuck DELETE for ever
					srv.Close()
				}
			})
			asked, never := make(chan struct{}), make(chan struct{})
			t.Cleanup(func() { close(never) })
			client := sdk.NewClient(&sdk.Implementation{Name: "test", Version: "test"}, &sdk.ClientOptions{
				ElicitationHandler: func(context.Context, *sdk.ElicitRequest) (*sdk.ElicitResult, error) {
					close(asked)
					<-never // the client goes away without answering
					return &sdk.ElicitResult{Action: "cancel"}, nil
				}})
			ctx := t.Context()
			cs, err := client.Connect(ctx, &sdk.StreamableClientTransport{Endpoint: srv.URL}, nil)
			if err != nil {
				t.Fatal(err)
			}
			go func() { _ = c.call(ctx, cs) }()
			select {
			case <-asked:
			case <-time.After(10 * time.Second):
				t.Fatal("the server never asked")
			}
			// The client's own Close would wait for its handler: end the session by hand.
			del, err := http.NewRequestWithContext(ctx, http.MethodDelete, srv.URL, nil)
			if err != nil {
				t.Fatal(err)
			}
			del.Header.Set("Mcp-Session-Id", cs.ID())
			ended := make(chan error, 1)
			go func() {
				res, err := http.DefaultClient.Do(del)
				if err == nil {
					res.Body.Close()
				}
				ended <- err
			}()
			select {
			case err := <-ended:
				if err != nil {
					t.Fatal(err)
				}
			case <-time.After(10 * time.Second):
				t.Fatal("the session's DELETE is still waiting for its unanswered question")
			}
		})
	}
}
