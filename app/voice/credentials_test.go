package voice

import (
	"encoding/json"
	"testing"

	"maven/app/mcp"
)

// TestCredentialAsked reads what a server's question asks for: a credential by a field's name,
// description, title or format, or by its message when a value is to be said; never a count of
// tokens, a pinned list, or a yes-or-no whose message names a secret.
func TestCredentialAsked(t *testing.T) {
	for _, c := range []struct{ message, schema, want string }{
		{"", `{"properties":{"value":{"type":"string","format":"password"}},"required":["value"]}`, "a password"},
		{"", `{"properties":{"user_pwd":{"type":"string"}},"required":["user_pwd"]}`, "a password"},
		{"", `{"properties":{"MFACode":{"type":"string"}},"required":["MFACode"]}`, "a one-time code"},
		{"", `{"properties":{"key":{"type":"string","description":"The API key for the account"}},"required":["key"]}`, "an API key"},
		{"Please enter your passcode.", `{"properties":{"value":{"type":"number"}},"required":["value"]}`, "a password"},
		{"Read me the recovery key.", `{"properties":{"value":{"type":"string"}},"required":["value"]}`, "a recovery code"},
		{"", `{"properties":{"max_tokens":{"type":"integer"},"pinned":{"type":"boolean"}},"required":["max_tokens"]}`, ""},
		{"Rotate the secret?", `{"properties":{"ok":{"type":"boolean"}},"required":["ok"]}`, ""},
		{"Which token store?", `{"properties":{"store":{"type":"string","enum":["a","b"]}},"required":["store"]}`, ""},
		{"What colour?", `{"properties":{"colour":{"type":"string"}},"required":["colour"]}`, ""},
	} {
		e := mcp.Elicitation{Server: "studio", Mode: "form", Message: c.message, Schema: json.RawMessage(c.schema)}
		f, why := readForm(e)
		if got := credentialAsked(e, f, why == ""); got != c.want {
			t.Errorf("%s %s: %q, want %q", c.message, c.schema, got, c.want)
		}
	}
}
