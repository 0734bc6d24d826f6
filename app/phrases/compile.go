package phrases

import (
	"errors"
	"fmt"
	"strings"
)

// LineError is a phrase that cannot be used, with its line number in what the owner wrote.
type LineError struct {
	Line int // from 1
	Text string
	Err  error
}

func (e LineError) Error() string { return fmt.Sprintf("line %d (%q): %v", e.Line, e.Text, e.Err) }

// Unwrap gives the cause.
func (e LineError) Unwrap() error { return e.Err }

// Error lists every unusable line of one text; nothing of that text is saved.
type Error struct {
	Lines []LineError
}

func (e *Error) Error() string {
	msgs := make([]string, len(e.Lines))
	for i, l := range e.Lines {
		msgs[i] = l.Error()
	}
	return "phrases not saved: " + strings.Join(msgs, "; ")
}

// ErrTooMany means the text holds more than MaxLines phrases.
var ErrTooMany = fmt.Errorf("at most %d phrases a tool", MaxLines)

// Compile parses the phrases of text (one a line; blank lines are skipped) and checks each slot
// against the tool's input schema. It returns the phrases as cleaned lines and parsed
// templates, or an *Error naming every line at fault.
func Compile(tool string, schema Schema, text string) ([]string, []Template, error) {
	var lines []string
	var templates []Template
	var bad []LineError
	for i, raw := range strings.Split(strings.ReplaceAll(text, "\r\n", "\n"), "\n") {
		line := strings.TrimSpace(raw)
		if line == "" {
			continue
		}
		t, err := Parse(line)
		if err == nil {
			err = checkSlots(tool, schema, t)
		}
		if err != nil {
			bad = append(bad, LineError{Line: i + 1, Text: line, Err: err})
			continue
		}
		lines, templates = append(lines, line), append(templates, t)
	}
	if len(lines)+len(bad) > MaxLines {
		return nil, nil, ErrTooMany
	}
	if len(bad) > 0 {
		return nil, nil, &Error{Lines: bad}
	}
	return lines, templates, nil
}

func checkSlots(tool string, schema Schema, t Template) error {
	var errs []error
	for _, slot := range t.Slots {
		if err := schema.checkSlot(tool, slot); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}
