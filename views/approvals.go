package views

// ApprovalsPage is /approvals: the calls that wait for the owner, then the recent ones, live;
// and the notifications card, since the notices lead here.
type ApprovalsPage struct {
	Page
	List ApprovalList
	Push PushCard
}

// ApprovalList is the live list of calls (approvals/_list), polled every two seconds.
type ApprovalList struct {
	Open   []ApprovalCard
	Recent []ApprovalCard
	// MoreOpen counts the open calls beyond those shown.
	MoreOpen int
	// Version names what the list shows: its poll swaps nothing until it changes.
	Version string
}

// ApprovalPage is /approvals/ID: one call, every detail of it, and its buttons.
type ApprovalPage struct {
	Page
	Call ApprovalCard
}

// ApprovalCard is one pending call (approvals/_call): short in the list, whole on its page
// (Full). Everything from outside Maven is Text, its hidden characters spelled out
// (docs/design.md#rule-25).
type ApprovalCard struct {
	ID         int64
	URL        string // its page
	Full       bool
	State      string // data-state
	StateLabel string
	Tone       string // "ok", "calm", "attention" or "trouble"
	Client     Text
	Tool       string // the row's name, for labels
	ToolText   Text
	Server     Text // "" for a local command
	Trust      string
	TrustShort string
	TrustText  string
	// Description is the tool's approved description; Why why the call needs the owner.
	Description Text
	// Limits are the owner's limits in force on the row, in short, which the call is within
	// (docs/design.md#rule-33); empty when it has none.
	Limits Text
	Why    string
	Args   []ApprovalArg
	// Summary is the arguments in one line, for the list.
	Summary Text
	Absent  []Text
	Created Time
	Expires Time
	// TimeLeft is "4 min 10 s left" while the call waits.
	TimeLeft string
	// Binding is what Approve's step-up names (pending.Binding); CanDecide shows the buttons.
	Binding   string
	CanDecide bool
	Decided   string // who approved or denied it, and when
	Reason    Text
	Result    *ApprovalResult
	// Deliveries are what each notifier did with the call's notice; NotDelivered says none
	// reached the owner.
	Deliveries   []Delivery
	NotDelivered bool
	// Message says what the owner's last action on the call did.
	Message string
	// Live polls the call's state while it is open.
	Live bool
}

// ApprovalArg is one argument of a call: its name and value, folded when long.
type ApprovalArg struct {
	Name  Text
	Value Text
	Long  bool
}

// ApprovalResult is what a call's run gave.
type ApprovalResult struct {
	Text    Text
	IsError bool
	Long    bool
}
