package voice

import (
	"encoding/json"
	"maps"
	"slices"
	"strings"
	"unicode"

	"maven/app/allowlist"
	"maven/app/mcp"
)

// A server's question is its own text, and a hostile server can ask the owner for anything: a
// password, an API key, the code a bank just texted, Maven's own recovery code. Spoken aloud and
// answered by voice, a credential would reach the server, and whoever hears the room. Voice
// never puts such a question: one whose form asks for a field named or described as a
// credential, or marked `format: password`, or whose message asks for one while a value is to be
// said, is declined, the owner hears why, and the feed keeps a flagged event
// (docs/design.md#rule-18).

// credential is one kind of credential, as the words that name it and as the owner hears it.
type credential struct {
	words [][]string // each a run of words that names the kind
	glued []string   // spellings found inside a longer word ("userpassword", "apikey")
	say   string
}

var credentials = []credential{
	{words: wordLists("recovery code", "recovery key", "recovery phrase", "seed phrase"), say: "a recovery code"},
	{words: wordLists("one time code", "one time password", "otp", "totp", "2fa", "mfa", "verification code",
		"security code", "authentication code", "auth code", "sms code", "login code"), glued: []string{"otp"}, say: "a one-time code"},
	{words: wordLists("api key", "access key", "secret key", "private key", "license key"), glued: []string{"apikey"}, say: "an API key"},
	{words: wordLists("password", "passcode", "passphrase", "passwd", "pwd"),
		glued: []string{"password", "passcode", "passphrase", "passwd"}, say: "a password"},
	{words: wordLists("pin", "pin code", "pin number"), say: "a PIN"},
	{words: wordLists("token", "access token", "bearer", "session token", "refresh token"), say: "a token"},
	{words: wordLists("secret", "client secret"), say: "a secret"},
	{words: wordLists("credential", "credentials", "login details"), say: "credentials"},
}

// credentialAsked names the credential a server's question asks for, as the owner hears it
// ("a password"); "" when it asks for none. f is the form as read, ok when voice could put it.
func credentialAsked(e mcp.Elicitation, f form, ok bool) string {
	var schema struct {
		Properties map[string]struct {
			Description, Title, Format json.RawMessage
		} `json:"properties"`
	}
	_ = json.Unmarshal(e.Schema, &schema) // what cannot be read is declined anyway
	for _, name := range slices.Sorted(maps.Keys(schema.Properties)) {
		p := schema.Properties[name]
		if rawString(p.Format) == "password" {
			return "a password"
		}
		for _, text := range []string{name, rawString(p.Description), rawString(p.Title)} {
			if say := credentialIn(text); say != "" {
				return say
			}
		}
	}
	// A message alone may ask for one when a value is to be said: a string, or a number (a PIN,
	// a code). A yes-or-no or a choice among the server's values cannot carry one.
	if ok && f.ask >= 0 {
		if field := f.fields[f.ask]; len(field.Enum) == 0 && field.Type != "boolean" {
			return credentialIn(e.Message)
		}
	}
	return ""
}

// credentialIn names the credential text mentions, "" for none. A name's words are read apart
// where its case changes ("apiKey", "userPassword").
func credentialIn(text string) string {
	words := allowlist.SpokenWords(splitCamel(text))
	for _, c := range credentials {
		for i := range words {
			if slices.ContainsFunc(c.words, func(w []string) bool { return len(w) <= len(words)-i && slices.Equal(words[i:i+len(w)], w) }) {
				return c.say
			}
		}
		for _, w := range words {
			if slices.ContainsFunc(c.glued, func(g string) bool { return strings.Contains(w, g) }) {
				return c.say
			}
		}
	}
	return ""
}

// splitCamel puts a space where a word of a name in camel case begins: "apiKey", "MFACode".
func splitCamel(s string) string {
	r := []rune(s)
	var b strings.Builder
	for i, c := range r {
		if i > 0 && unicode.IsUpper(c) && (!unicode.IsUpper(r[i-1]) || i+1 < len(r) && unicode.IsLower(r[i+1])) {
			b.WriteByte(' ')
		}
		b.WriteRune(c)
	}
	return b.String()
}

func rawString(raw json.RawMessage) string {
	var s string
	_ = json.Unmarshal(raw, &s)
	return s
}
