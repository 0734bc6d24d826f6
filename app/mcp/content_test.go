package mcp

import (
	"encoding/json"
	"strings"
	"testing"
	"unicode/utf8"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestAgentContent: every kind of content reaches an agent with its payload and nothing else
// (no _meta, no annotations, no icons); structured content passes as JSON; what does not fit
// the budget is cut (text) or left out with a note saying so (binary data, structured content,
// the blocks past the end), and the whole stays within the budget.
func TestAgentContent(t *testing.T) {
	size := int64(5)
	ann := &sdk.Annotations{Priority: 1}
	meta := sdk.Meta{"vendor": strings.Repeat("m", 100)}
	res := &sdk.CallToolResult{
		Content: []sdk.Content{
			&sdk.TextContent{Text: "hello", Meta: meta, Annotations: ann},
			&sdk.ImageContent{Data: []byte("PNG"), MIMEType: "image/png", Meta: meta, Annotations: ann},
			&sdk.AudioContent{Data: []byte("RIFF"), MIMEType: "audio/wav", Meta: meta},
			&sdk.ResourceLink{URI: "file:///a", Name: "a", Title: "A", Description: "the a", MIMEType: "text/plain", Size: &size,
				Icons: []sdk.Icon{{Source: "https://x/icon.png"}}, Meta: meta},
			&sdk.EmbeddedResource{Resource: &sdk.ResourceContents{URI: "test://1", MIMEType: "text/plain", Text: "body", Meta: meta}, Meta: meta},
			&sdk.EmbeddedResource{Resource: &sdk.ResourceContents{URI: "test://2", MIMEType: "application/octet-stream", Blob: []byte{1, 2, 3}}},
		},
		StructuredContent: map[string]any{"sum": 3},
	}
	blocks, structured := agentContent(res, MaxContentBytes)
	got, err := json.Marshal(&sdk.CallToolResult{Content: blocks, StructuredContent: structured})
	if err != nil {
		t.Fatal(err)
	}
	want := `{"content":[{"type":"text","text":"hello"},{"type":"image","mimeType":"image/png","data":"UE5H"},` +
		`{"type":"audio","mimeType":"audio/wav","data":"UklGRg=="},` +
		`{"type":"resource_link","mimeType":"text/plain","uri":"file:///a","name":"a","title":"A","description":"the a","size":5},` +
		`{"type":"resource","resource":{"uri":"test://1","mimeType":"text/plain","text":"body"}},` +
		`{"type":"resource","resource":{"uri":"test://2","mimeType":"application/octet-stream","blob":"AQID"}}],` +
		`"structuredContent":{"sum":3}}`
	if string(got) != want {
		t.Errorf("agent content\n got %s\nwant %s", got, want)
	}

	t.Run("a long text is cut at a character boundary", func(t *testing.T) {
		long := strings.Repeat("é", MaxContentBytes)
		blocks, _ := agentContent(&sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: long}}}, MaxContentBytes)
		text := blocks[0].(*sdk.TextContent).Text
		if len(text) > MaxContentBytes || !strings.HasSuffix(text, cutMarker) || !utf8.ValidString(text) {
			t.Errorf("cut text: %d bytes, ends %q, valid UTF-8 %v", len(text), text[len(text)-60:], utf8.ValidString(text))
		}
	})
	t.Run("what does not fit is left out, said, and the rest still fits", func(t *testing.T) {
		big := make([]byte, MaxContentBytes)
		res := &sdk.CallToolResult{
			Content: []sdk.Content{
				&sdk.ImageContent{Data: big, MIMEType: "image/png"},
				&sdk.TextContent{Text: "after the image"},
				&sdk.EmbeddedResource{Resource: &sdk.ResourceContents{URI: "test://big", Blob: big}},
			},
			StructuredContent: map[string]any{"big": strings.Repeat("x", MaxContentBytes)},
		}
		blocks, structured := agentContent(res, MaxContentBytes)
		var texts []string
		for _, b := range blocks {
			texts = append(texts, b.(*sdk.TextContent).Text)
		}
		for i, want := range []string{"image (image/png) of 1398104 bytes left out", "after the image", "embedded resource of 1398104 bytes left out", "structured content of 1048586 bytes left out"} {
			if i >= len(texts) || !strings.Contains(texts[i], want) {
				t.Errorf("block %d: %q, want it to say %q", i, texts, want)
			}
		}
		if structured != nil {
			t.Errorf("structured content over the budget passed: %d bytes", len(structured))
		}
	})
	t.Run("past the budget, the blocks left are one note", func(t *testing.T) {
		var many []sdk.Content
		for range 100_000 {
			many = append(many, &sdk.TextContent{Text: strings.Repeat("t", 100)})
		}
		blocks, _ := agentContent(&sdk.CallToolResult{Content: many}, MaxContentBytes)
		raw, err := json.Marshal(blocks)
		if err != nil {
			t.Fatal(err)
		}
		last := blocks[len(blocks)-1].(*sdk.TextContent).Text
		if !strings.Contains(last, "more content blocks left out") {
			t.Errorf("the last block is %q, want a note of the blocks left out", last)
		}
		if len(raw) > MaxContentBytes+1024 {
			t.Errorf("%d blocks take %d bytes of JSON, over the budget of %d", len(blocks), len(raw), MaxContentBytes)
		}
	})
}
