package views

// Limits is what a row shows of the owner's limits on its arguments (docs/design.md#rule-33),
// and, on an enabled MCP row, the form that edits them.
type Limits struct {
	// Summary is the limits in force, in short: "temperature 17–23; mode: heat, cool"; empty
	// when there are none. RunUnasked: calls within them run without asking the owner.
	Summary    Text
	RunUnasked bool
	// Void says that the saved limits were for a shape the tool no longer has.
	Void string
	// Editable rows (enabled MCP tools with arguments) have the form, in their details; Open
	// unfolds the details, to show what a save did.
	Editable bool
	Open     bool
	// Props are the form's properties; Unasked its "run without asking" box, and Problems what
	// is wrong with the limits as a whole, shown beside that box.
	Props    []LimitProp
	Unasked  bool
	Problems []Text
	// Status is what the last save did, and Refused whether it was refused.
	Status  string
	Refused bool
}

// LimitProp is one property of a tool's input schema on the limits form: the kinds of limit it
// takes and each field as the owner last wrote it, or why it takes none.
type LimitProp struct {
	ID       string // the start of its elements' ids: "limit-7-2"
	Name     string // the property's name, as stored
	NameText Text
	// Holds says what the property holds: "a number", "one of heat, cool or off".
	Holds    string
	Required bool
	// Unlimitable says why it takes no limit; then Kinds is empty.
	Unlimitable string
	Kinds       []Option
	// Kind is the kind chosen ("" for no limit); Error why its limit cannot be saved.
	Kind  string
	Error Text
	// Fields are the names of its form fields.
	Fields LimitFields
	// Choices are the values a property of listed values (its enum, or true and false) is
	// limited to by choosing; without them the owner types the values.
	Choices []Choice
	// What the owner wrote: the fixed value, the allowed values one a line, the bounds (of a
	// range, or of a length) and the pattern.
	Value, Values, Min, Max, Pattern string
	// TakesBounds and TakesPattern: it takes a range or a length, and a pattern; every
	// property that takes a limit takes a fixed value and allowed values.
	TakesBounds, TakesPattern bool
	// String: it holds text, so its bounds are of a length.
	String bool
}

// LimitFields are the names of one property's fields on the limits form.
type LimitFields struct{ Kind, Value, Values, Min, Max, Pattern string }

// Choice is one of a property's listed values on the limits form: its JSON as the form sends
// it, its text, and whether it is the fixed value or among the allowed ones.
type Choice struct {
	Value   string
	Label   Text
	Fixed   bool
	Allowed bool
}
