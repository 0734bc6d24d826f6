package mcp

import (
	"encoding/base64"
	"encoding/json"
	"fmt"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"maven/app/reveal"
)

// MaxContentBytes bounds what one result passes on to an agent (docs/design.md#rule-28): its
// text, its binary data as the base64 the wire carries, its URIs and names, and its structured
// content as JSON, counted together. Text past it is cut; a block or structured content that
// does not fit whole is left out, and a short note says so in its place.
const MaxContentBytes = 1 << 20

// cutMarker ends a text an agent is given cut.
const cutMarker = "\n[cut: a result reaches an agent bounded]"

// blockOverhead is what each block is charged beyond its payload, for its JSON framing: a
// result of a million empty blocks is not a small one.
const blockOverhead = 32

// agentContent returns res's content blocks and structured content as an agent is given them,
// within budget bytes: each block keeps its kind and payload (text, data and MIME type, a
// link's URI, name, title, description, MIME type and size, an embedded resource's contents)
// and nothing else, so that nothing the budget does not count is passed on (no _meta, no
// annotations, no icons). Notes of what was left out count too; the last may pass the budget
// by its own few bytes.
func agentContent(res *sdk.CallToolResult, budget int) ([]sdk.Content, json.RawMessage) {
	b := &contentBudget{left: budget}
	blocks := make([]sdk.Content, 0, len(res.Content))
	for i, c := range res.Content {
		if b.left <= 0 {
			blocks = append(blocks, b.note(fmt.Sprintf("[%d more content blocks left out: a result reaches an agent bounded]", len(res.Content)-i)))
			break
		}
		b.left -= blockOverhead
		blocks = append(blocks, b.block(c))
	}
	if res.StructuredContent == nil {
		return blocks, nil
	}
	raw, err := json.Marshal(res.StructuredContent)
	switch {
	case err != nil:
		blocks = append(blocks, b.note("[structured content that cannot be encoded, left out]"))
	case len(raw) > b.left:
		blocks = append(blocks, b.note(fmt.Sprintf("[structured content of %d bytes left out: a result reaches an agent bounded]", len(raw))))
	default:
		b.left -= len(raw)
		return blocks, raw
	}
	return blocks, nil
}

// contentBudget is what is left of one result's MaxContentBytes.
type contentBudget struct{ left int }

// block is c within the budget: a copy of its payload, its text cut to what is left, or a note
// in its place when it does not fit whole.
func (b *contentBudget) block(c sdk.Content) sdk.Content {
	switch c := c.(type) {
	case *sdk.TextContent:
		return &sdk.TextContent{Text: b.text(c.Text)}
	case *sdk.ImageContent:
		if b.take(dataLen(c.Data), c.MIMEType) {
			return &sdk.ImageContent{Data: c.Data, MIMEType: c.MIMEType}
		}
		return b.note(leftOut("image", c.MIMEType, dataLen(c.Data)))
	case *sdk.AudioContent:
		if b.take(dataLen(c.Data), c.MIMEType) {
			return &sdk.AudioContent{Data: c.Data, MIMEType: c.MIMEType}
		}
		return b.note(leftOut("audio", c.MIMEType, dataLen(c.Data)))
	case *sdk.ResourceLink:
		if b.take(0, c.URI, c.Name, c.Title, c.Description, c.MIMEType) {
			return &sdk.ResourceLink{URI: c.URI, Name: c.Name, Title: c.Title, Description: c.Description, MIMEType: c.MIMEType, Size: c.Size}
		}
		return b.note(leftOut("resource link", "", len(c.URI)+len(c.Name)+len(c.Title)+len(c.Description)))
	case *sdk.EmbeddedResource:
		return b.resource(c)
	case nil:
		return b.note("[an empty content block, left out]")
	default:
		return b.note("[a content block of a kind Maven does not pass on, left out]")
	}
}

// resource is an embedded resource within the budget: its text cut, its blob whole or not at
// all.
func (b *contentBudget) resource(c *sdk.EmbeddedResource) sdk.Content {
	r := c.Resource
	if r == nil || !b.take(0, r.URI, r.MIMEType) {
		return b.note("[an embedded resource, left out: a result reaches an agent bounded]")
	}
	out := &sdk.ResourceContents{URI: r.URI, MIMEType: r.MIMEType}
	if r.Text != "" {
		out.Text = b.text(r.Text)
	}
	if len(r.Blob) > 0 {
		if !b.take(dataLen(r.Blob)) {
			return b.note(leftOut("embedded resource", r.MIMEType, dataLen(r.Blob)))
		}
		out.Blob = r.Blob
	}
	return &sdk.EmbeddedResource{Resource: out}
}

// take spends data bytes and the lengths of strs if they fit in what is left, and reports
// whether they did; nothing is spent when they do not.
func (b *contentBudget) take(data int, strs ...string) bool {
	n := data
	for _, s := range strs {
		n += len(s)
	}
	if n > b.left {
		return false
	}
	b.left -= n
	return true
}

// text is s cut to what is left, and spent.
func (b *contentBudget) text(s string) string {
	s, _ = reveal.Cut(s, max(b.left, len(cutMarker)), cutMarker)
	b.left -= len(s)
	return s
}

// note is a text block saying what was left out, spent.
func (b *contentBudget) note(s string) sdk.Content {
	b.left -= len(s)
	return &sdk.TextContent{Text: s}
}

// dataLen is the length of data as the wire carries it, in base64.
func dataLen(data []byte) int { return base64.StdEncoding.EncodedLen(len(data)) }

// leftOut says that a block of kind, of n bytes on the wire, was left out.
func leftOut(kind, mimeType string, n int) string {
	if mimeType != "" {
		mimeType, _ = reveal.Cut(mimeType, 100, "…")
		kind += " (" + mimeType + ")"
	}
	return fmt.Sprintf("[%s of %d bytes left out: a result reaches an agent bounded]", kind, n)
}
