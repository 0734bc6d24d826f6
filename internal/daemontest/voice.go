package daemontest

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"time"
)

// VoiceReply is the answer of POST /voice (docs/design.md#http).
type VoiceReply struct {
	Speech       string `json:"speech"`
	Outcome      string `json:"outcome"`
	ExpectsReply bool   `json:"expects_reply"`
	Tool         string `json:"tool"`
	Output       string `json:"output"`
}

// Say posts text to the daemon's POST /voice in conversation, with the bearer token, as a voice
// front end does; any answer but 200 is an error naming the status and the body.
func Say(ctx context.Context, addr, token, conversation, text string) (VoiceReply, error) {
	body, err := json.Marshal(map[string]string{"conversation_id": conversation, "text": text})
	if err != nil {
		return VoiceReply{}, err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, "http://"+addr+"/voice", bytes.NewReader(body))
	if err != nil {
		return VoiceReply{}, err
	}
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Content-Type", "application/json")
	c := http.Client{Timeout: 60 * time.Second}
	resp, err := c.Do(req)
	if err != nil {
		return VoiceReply{}, fmt.Errorf("POST /voice %q: %w", text, err)
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	if err != nil {
		return VoiceReply{}, fmt.Errorf("POST /voice %q: %w", text, err)
	}
	if resp.StatusCode != http.StatusOK {
		return VoiceReply{}, fmt.Errorf("POST /voice %q: %d %s", text, resp.StatusCode, bytes.TrimSpace(raw))
	}
	var r VoiceReply
	if err := json.Unmarshal(raw, &r); err != nil {
		return VoiceReply{}, fmt.Errorf("POST /voice %q: %w: %s", text, err, raw)
	}
	return r, nil
}
