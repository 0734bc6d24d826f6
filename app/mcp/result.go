package mcp

import (
	"encoding/json"
	"fmt"
	"strings"
	"unicode/utf8"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"maven/app/reveal"
	"maven/app/runner"
)

// MaxResultText is the most bytes of text FlattenResult keeps; the far end decides how much it
// sends, and the result ends up in a spoken reply.
const MaxResultText = 64 << 10

// truncatedMarker ends a result cut at MaxResultText.
const truncatedMarker = "\n[output truncated]"

// FlattenResult turns a tool result into the text a voice reply can read out: text contents
// joined by newlines, other contents named in brackets, or, when there is no content at all,
// the structured content as JSON. IsError is copied. The text is cut at MaxResultText bytes (on
// a character boundary) and marked when cut. The result also keeps the content as an agent is
// given it, within MaxContentBytes (see agentContent).
func FlattenResult(res *sdk.CallToolResult) runner.Result {
	if res == nil {
		return runner.Result{}
	}
	parts := make([]string, 0, len(res.Content))
	for _, c := range res.Content {
		parts = append(parts, contentText(c))
	}
	if len(res.Content) == 0 && res.StructuredContent != nil {
		if b, err := json.Marshal(res.StructuredContent); err == nil {
			parts = append(parts, string(b))
		} else {
			parts = append(parts, "[structured content that cannot be encoded]")
		}
	}
	out, truncated := capText(strings.Join(parts, "\n"), MaxResultText)
	content, structured := agentContent(res, MaxContentBytes)
	return runner.Result{Output: out, Truncated: truncated, IsError: res.IsError, Content: content, Structured: structured}
}

// contentText renders one content block. Binary data is never copied into the text: only its
// kind and type are named.
func contentText(c sdk.Content) string {
	switch c := c.(type) {
	case *sdk.TextContent:
		return c.Text
	case *sdk.ImageContent:
		return bracket("image", c.MIMEType)
	case *sdk.AudioContent:
		return bracket("audio", c.MIMEType)
	case *sdk.ResourceLink:
		return bracket("resource link", c.Name, c.URI)
	case *sdk.EmbeddedResource:
		if c.Resource == nil {
			return "[embedded resource]"
		}
		return bracket("embedded resource", c.Resource.URI)
	case nil:
		return "[empty content]"
	default:
		return fmt.Sprintf("[%T content]", c)
	}
}

// bracket joins a kind and its non-empty details into "[kind detail…]". The details come from
// the server, so they are quoted when they hold anything that could disguise the bracket.
func bracket(kind string, details ...string) string {
	var b strings.Builder
	b.WriteString("[" + kind)
	for _, d := range details {
		if d == "" {
			continue
		}
		b.WriteByte(' ')
		if strings.ContainsAny(d, " []\n\r\t") || !utf8.ValidString(d) {
			d = fmt.Sprintf("%q", d)
		}
		b.WriteString(d)
	}
	b.WriteByte(']')
	return b.String()
}

// capText cuts s to at most limit bytes, without splitting a character, adding the marker.
func capText(s string, limit int) (string, bool) {
	return reveal.Cut(s, limit, truncatedMarker)
}
