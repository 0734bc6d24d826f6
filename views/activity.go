package views

// ActivityPage is /activity: the filters and one page of the activity feed.
type ActivityPage struct {
	Page
	Filters ActivityFilters
	List    ActivityList
}

// ActivityFilters is the filter form as the owner last submitted it.
type ActivityFilters struct {
	Kinds    []Option // "all", then voice, changes and servers: the switch
	Outcomes []Option // "any", then every voice outcome
	Tool     string
	Tools    []string // the allowlist's names, offered while typing
	Day      string   // YYYY-MM-DD, "" for every day
}

// Option is one choice of a select.
type Option struct {
	Value    string
	Label    string
	Selected bool
}

// ActivityList is one page of the feed, newest first; the filter form and the pager swap it.
type ActivityList struct {
	Entries []ActivityEntry
	// Problem says which filter could not be read (it was left out); "" when all were.
	Problem string
	Empty   string // what to say when the page has no entry
	// OlderURL lists the entries before this page; NewestURL goes back to the first page. ""
	// when there is no such page.
	OlderURL  string
	NewestURL string
}

// ActivityEntry is one event of the feed. Everything from outside Maven (utterances, tool
// names, arguments, servers' errors, command lines) is Text: hidden characters spelled out.
type ActivityEntry struct {
	ID     int64
	At     Time
	Action string // as the feed names it: "voice_turn", "enabled", …
	What   string // the action in words: "Voice", "Enabled", …
	Actor  string
	// Tool is the row's name at the time ("" for none); ToolURL filters the feed by it.
	Tool     string
	ToolText Text
	ToolURL  string
	// Outcome is a voice turn's ("ran", "no_match", …), OutcomeLabel the same in words.
	Outcome      string
	OutcomeLabel string
	Tone         string // "ok", "calm" or "trouble": how the outcome or state is shown
	Utterance    Text   // a voice turn's words
	Reply        Text   // what Maven said back to them
	Args         []Fact // the arguments a run was bound to
	// Server and ToolsURL make the entry the one line of the tools a discovery proposed: the
	// server (if known) and /tools showing only those tools; What says how many.
	Server   Text
	ToolsURL string
	// CallURL is the page of the pending call the event is about (docs/design.md#rule-30).
	CallURL string
	Facts   []Fact // the rest of what the event records
}

// Fact is one labelled value of an event; Code shows it as code (a command line, phrases). An
// argument's label is the tool's property name, from outside Maven too.
type Fact struct {
	Label Text
	Value Text
	Code  bool
}
