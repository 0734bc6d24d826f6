package mcp

import (
	"reflect"
	"strings"
	"testing"
	"unicode/utf8"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"maven/app/runner"
)

func TestFlattenResult(t *testing.T) {
	size := int64(3)
	tests := []struct {
		name string
		res  *sdk.CallToolResult
		want runner.Result
	}{
		{"nil", nil, runner.Result{}},
		{"empty", &sdk.CallToolResult{}, runner.Result{}},
		{"texts joined", &sdk.CallToolResult{Content: []sdk.Content{
			&sdk.TextContent{Text: "one"}, &sdk.TextContent{Text: "two"},
		}}, runner.Result{Output: "one\ntwo"}},
		{"error copied", &sdk.CallToolResult{IsError: true, Content: []sdk.Content{
			&sdk.TextContent{Text: "bad input"},
		}}, runner.Result{Output: "bad input", IsError: true}},
		{"image named, data dropped", &sdk.CallToolResult{Content: []sdk.Content{
			&sdk.TextContent{Text: "here:"}, &sdk.ImageContent{MIMEType: "image/png", Data: []byte("PNGDATA")},
		}}, runner.Result{Output: "here:\n[image image/png]"}},
		{"audio", &sdk.CallToolResult{Content: []sdk.Content{
			&sdk.AudioContent{MIMEType: "audio/wav", Data: []byte("RIFF")},
		}}, runner.Result{Output: "[audio audio/wav]"}},
		{"resource link", &sdk.CallToolResult{Content: []sdk.Content{
			&sdk.ResourceLink{Name: "notes", URI: "file:///tmp/notes.txt", Size: &size},
		}}, runner.Result{Output: "[resource link notes file:///tmp/notes.txt]"}},
		{"resource link with a name that could fake a bracket", &sdk.CallToolResult{Content: []sdk.Content{
			&sdk.ResourceLink{Name: "x] [image", URI: "test://a"},
		}}, runner.Result{Output: `[resource link "x] [image" test://a]`}},
		{"embedded resource", &sdk.CallToolResult{Content: []sdk.Content{
			&sdk.EmbeddedResource{Resource: &sdk.ResourceContents{URI: "test://static/1", Text: "secret body"}},
		}}, runner.Result{Output: "[embedded resource test://static/1]"}},
		{"embedded resource without contents", &sdk.CallToolResult{Content: []sdk.Content{
			&sdk.EmbeddedResource{},
		}}, runner.Result{Output: "[embedded resource]"}},
		{"structured only", &sdk.CallToolResult{StructuredContent: map[string]any{"sum": 3}},
			runner.Result{Output: `{"sum":3}`}},
		{"structured ignored when content exists", &sdk.CallToolResult{
			Content:           []sdk.Content{&sdk.TextContent{Text: "3"}},
			StructuredContent: map[string]any{"sum": 3},
		}, runner.Result{Output: "3"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := FlattenResult(tt.res)
			// What voice reads; the content agents are given is TestAgentContent's.
			got.Content, got.Structured = nil, nil
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("FlattenResult = %+v, want %+v", got, tt.want)
			}
		})
	}
}

func TestFlattenResultCapsText(t *testing.T) {
	// A multi-byte character straddles the cut: it must not be split.
	long := strings.Repeat("a", MaxResultText-20) + strings.Repeat("é", 100)
	got := FlattenResult(&sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: long}}})
	if !got.Truncated {
		t.Error("Truncated = false, want true")
	}
	if len(got.Output) > MaxResultText {
		t.Errorf("len(Output) = %d, over %d", len(got.Output), MaxResultText)
	}
	if !strings.HasSuffix(got.Output, truncatedMarker) {
		t.Errorf("Output does not end with the marker: %q", got.Output[len(got.Output)-40:])
	}
	if !utf8.ValidString(got.Output) {
		t.Error("Output is not valid UTF-8: a character was split")
	}

	exact := strings.Repeat("b", MaxResultText)
	got = FlattenResult(&sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: exact}}})
	if got.Truncated || got.Output != exact {
		t.Errorf("a result of exactly MaxResultText bytes was cut (Truncated=%v, len=%d)", got.Truncated, len(got.Output))
	}
}
