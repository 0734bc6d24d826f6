package config

import (
	"strconv"
	"strings"
)

// Error is one error in a config file: it names the key at fault and what was expected there,
// so the owner can fix the file without guessing. Parse and Load report every error of a file
// at once, as Errors; use errors.As to get the first *Error, or to get the Errors.
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
	// unknown marks an unknown key: it leaves no value behind for other checks to misjudge.
	unknown bool
}

// Error renders "config: KEY: MSG", with the file name first when there is one.
func (e *Error) Error() string {
	var b strings.Builder
	b.WriteString("config: ")
	if e.File != "" {
		b.WriteString(e.File)
		b.WriteString(": ")
	}
	b.WriteString(e.line())
	return b.String()
}

// line is the error without the "config: FILE: " prefix.
func (e *Error) line() string {
	if e.Key != "" && !e.keyInMsg {
		return e.Key + ": " + e.Msg
	}
	return e.Msg
}

// Unwrap returns the underlying cause.
func (e *Error) Unwrap() error { return e.Err }

// errorf builds an *Error for key.
func errorf(key, msg string) *Error { return &Error{Key: key, Msg: msg} }

// Errors is every error of one file, in the order of the file's keys. It is never empty.
type Errors []*Error

// Error renders one error as *Error does, and several as a count followed by one line each.
func (es Errors) Error() string {
	if len(es) == 1 {
		return es[0].Error()
	}
	var b strings.Builder
	b.WriteString("config: ")
	if es[0].File != "" {
		b.WriteString(es[0].File)
		b.WriteString(": ")
	}
	b.WriteString(strconv.Itoa(len(es)))
	b.WriteString(" errors:")
	for _, e := range es {
		b.WriteString("\n  ")
		b.WriteString(e.line())
	}
	return b.String()
}

// Unwrap lets errors.As and errors.Is see each *Error.
func (es Errors) Unwrap() []error {
	out := make([]error, len(es))
	for i, e := range es {
		out[i] = e
	}
	return out
}

// errorsOf returns es as an error: nil when empty.
func errorsOf(es []*Error) error {
	if len(es) == 0 {
		return nil
	}
	return Errors(es)
}

// Warning is something in the file that Maven accepted but that may not do what its author
// expects: a key of another MCP client that means nothing here (and so grants nothing), another
// client's name for one of Maven's keys, a value shown and stored in the clear.
type Warning struct {
	Key string
	Msg string
}

// String renders "KEY: MSG".
func (w Warning) String() string {
	if w.Key == "" {
		return w.Msg
	}
	return w.Key + ": " + w.Msg
}
