package views

// PushCard is the notifications card (push/_subscribe): the key this browser subscribes with,
// the browsers subscribed, and what the last action did. /approvals shows it, where the
// notices lead.
type PushCard struct {
	PublicKey string // the VAPID public key, base64url: the subscription's applicationServerKey
	Browsers  []PushBrowser
	// Message says what the action that rendered the card did ("" for none); the page focuses
	// it. Deliveries are what "Send a test" did, one per notifier's target.
	Message    string
	Deliveries []Delivery
}

// PushBrowser is one subscribed browser.
type PushBrowser struct {
	ID      int64
	Label   string // the browser and its system, from Maven's few words for them ("Chrome on Android")
	Service string // the push service's host
	Since   Time
	// EndpointHash is the first 16 hex digits of the endpoint's SHA-256: push.js finds this
	// browser's own subscription by it, and the page never holds an endpoint.
	EndpointHash string
}

// Delivery is what one notifier did with one notice: through which ("Web Push"), to whom, and
// why not.
type Delivery struct {
	Through string
	Target  Text
	OK      bool
	Err     Text
}
