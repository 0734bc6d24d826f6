package config

import "strings"

// Error is every error this package returns: it names the config key at fault and what was
// expected there, so the owner can fix the file without guessing. Use errors.As to get one.
type Error struct {
	File string // the file Load read, "" for Parse
	// Key is the path of the key at fault, such as "mcpServers.vikunja.url" or "tools[1].argv";
	// "" when the error concerns the whole document (a syntax error, an unreadable file).
	Key string
	Msg string // what is wrong, and what was expected
	Err error  // the underlying cause, if any (for errors.Is)

	// keyInMsg is set when Msg already quotes the key ("unknown key "x"") and must not be
	// prefixed with it again.
	keyInMsg bool
}

// Error renders "config: KEY: MSG", with the file name first when there is one.
func (e *Error) Error() string {
	var b strings.Builder
	b.WriteString("config: ")
	if e.File != "" {
		b.WriteString(e.File)
		b.WriteString(": ")
	}
	if e.Key != "" && !e.keyInMsg {
		b.WriteString(e.Key)
		b.WriteString(": ")
	}
	b.WriteString(e.Msg)
	return b.String()
}

// Unwrap returns the underlying cause.
func (e *Error) Unwrap() error { return e.Err }

// errorf builds an *Error for key.
func errorf(key, msg string) *Error { return &Error{Key: key, Msg: msg} }
