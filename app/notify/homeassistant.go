package notify

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"

	"maven/app/config"
)

// homeAssistant calls one notify service of Home Assistant through its REST API
// (POST /api/services/notify/NAME, with a long-lived access token), with the companion app's
// fields for a link: a tap opens it (data.url on iOS, data.clickAction on Android), and so does
// the notification's one action, a URI action. No action acts.
type homeAssistant struct {
	endpoint string // the service's URL
	token    string // as configured: it may hold secret references
	sealed   bool   // the token refers to a secret
	target   string // the service and the server, shown in a delivery
	client   *http.Client
}

func newHomeAssistant(h config.HomeAssistant, client *http.Client) (*homeAssistant, error) {
	u, err := url.Parse(h.URL)
	if err != nil {
		return nil, fmt.Errorf("notify: home_assistant: %w", err)
	}
	u.Path, u.RawPath = "/api/services/notify/"+h.ServiceName(), ""
	return &homeAssistant{endpoint: u.String(), token: h.Token, sealed: strings.Contains(h.Token, "${secret:"),
		target: h.Service + " at " + u.Host, client: client}, nil
}

// haService is the service data of a call to a notify service.
type haService struct {
	Title   string `json:"title"`
	Message string `json:"message"`
	Data    haData `json:"data"`
}

type haData struct {
	URL         string     `json:"url"`         // the iOS app opens it on a tap
	ClickAction string     `json:"clickAction"` // the Android app opens it on a tap
	Actions     []haAction `json:"actions"`
}

type haAction struct {
	Action string `json:"action"` // always "URI": the action opens uri
	Title  string `json:"title"`
	URI    string `json:"uri"`
}

// send calls the notify service with msg, the token's secrets read through lookup (nil while
// the vault is locked).
func (h *homeAssistant) send(ctx context.Context, msg message, lookup func(string) ([]byte, bool)) error {
	token := h.token
	if h.sealed {
		if lookup == nil {
			return errors.New("not sent: the Home Assistant token is a sealed secret, and Maven is locked: unlock it")
		}
		var err error
		if token, err = config.Expand(h.token, lookup); err != nil {
			var ce *config.Error
			if errors.As(err, &ce) && errors.Is(err, config.ErrSecretNotSet) {
				return fmt.Errorf("not sent: the Home Assistant token's %s: set it on /secrets", ce.Msg)
			}
			return fmt.Errorf("not sent: the Home Assistant token: %w", err)
		}
	}
	body, err := json.Marshal(haService{Title: msg.Title, Message: msg.Body, Data: haData{URL: msg.URL, ClickAction: msg.URL,
		Actions: []haAction{{Action: "URI", Title: "Open", URI: msg.URL}}}})
	if err != nil {
		return err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, h.endpoint, bytes.NewReader(body))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+token)
	res, err := h.client.Do(req)
	if err != nil {
		return unreachable("Home Assistant at "+hostOf(h.endpoint), err)
	}
	defer drain(res.Body)
	switch {
	case res.StatusCode/100 == 2:
		return nil
	case res.StatusCode == http.StatusUnauthorized:
		return fmt.Errorf("the token was refused by Home Assistant (%s): make a new long-lived access token in your Home Assistant profile and set it", res.Status)
	}
	return fmt.Errorf("the call of %s was refused: %s", h.target, refusal(res))
}
