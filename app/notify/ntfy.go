package notify

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strings"
)

// ntfy publishes to one ntfy topic in ntfy's JSON form (docs.ntfy.sh, "Publish as JSON"),
// which carries a tool's name in any script where a header may not.
type ntfy struct {
	root   string // the server's URL, where JSON is published
	topic  string
	target string // the server, shown in a delivery; the topic is left out, as anyone who knows it can read it
	client *http.Client
}

func newNtfy(topicURL string, client *http.Client) (*ntfy, error) {
	u, err := url.Parse(topicURL)
	if err != nil {
		return nil, fmt.Errorf("notify: ntfy: %w", err)
	}
	i := strings.LastIndexByte(u.Path, '/')
	if i < 0 || i == len(u.Path)-1 {
		return nil, fmt.Errorf("notify: ntfy: %q names no topic", topicURL)
	}
	n := &ntfy{topic: u.Path[i+1:], target: u.Host + u.Path[:i], client: client}
	u.Path, u.RawPath = u.Path[:i+1], ""
	n.root = u.String()
	return n, nil
}

// ntfyMessage is the JSON of one publish. Its only action opens the approval page: ntfy's
// http action, which could approve from the notification, is never used.
type ntfyMessage struct {
	Topic    string       `json:"topic"`
	Title    string       `json:"title"`
	Message  string       `json:"message"`
	Click    string       `json:"click"`
	Priority int          `json:"priority"`
	Actions  []ntfyAction `json:"actions"`
}

type ntfyAction struct {
	Action string `json:"action"` // always "view"
	Label  string `json:"label"`
	URL    string `json:"url"`
	Clear  bool   `json:"clear"`
}

func (n *ntfy) send(ctx context.Context, msg message) error {
	body, err := json.Marshal(ntfyMessage{Topic: n.topic, Title: msg.Title, Message: msg.Body, Click: msg.URL,
		Priority: 4, Actions: []ntfyAction{{Action: "view", Label: "Open", URL: msg.URL, Clear: true}}})
	if err != nil {
		return err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, n.root, bytes.NewReader(body))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	res, err := n.client.Do(req)
	if err != nil {
		return unreachable("ntfy at "+n.target, err)
	}
	defer drain(res.Body)
	if res.StatusCode/100 != 2 {
		return fmt.Errorf("ntfy at %s refused it: %s", n.target, refusal(res))
	}
	return nil
}
