package auth

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-webauthn/webauthn/protocol"
	"github.com/go-webauthn/webauthn/webauthn"

	"maven/app/activity"
)

// Errors of the auth package. Handlers map each to a status and a message fit for the owner;
// the wrapped detail is for the log only.
var (
	ErrNoOwner          = errors.New("no owner has registered")
	ErrPasskeyNotFound  = errors.New("passkey not found")
	ErrDuplicatePasskey = errors.New("passkey already registered")
	ErrLastPasskey      = errors.New("the only passkey cannot be removed")
	ErrInvalidName      = errors.New("invalid passkey name")
	ErrSetupLinkInvalid = errors.New("setup link is unknown, used or expired")
	// ErrNoCeremony means no ceremony of that kind is pending for the session: it was never
	// begun, already finished (a replay), or forgotten.
	ErrNoCeremony = errors.New("no passkey ceremony pending for this session")
	// ErrCeremonyExpired means the ceremony was begun too long ago.
	ErrCeremonyExpired = errors.New("passkey ceremony expired")
	// ErrVerificationFailed means the authenticator's response did not verify.
	ErrVerificationFailed = errors.New("passkey verification failed")
	// ErrUserNotVerified means this ceremony's authenticator data lacks the UV flag.
	ErrUserNotVerified = errors.New("the authenticator did not verify the user")
	// ErrCloneWarning means the signature counter did not increase: the passkey may be copied.
	ErrCloneWarning = errors.New("passkey signature counter went backwards")
	// ErrBackupEligibilityChanged means the BE flag differs from registration; the passkey has to
	// be registered again.
	ErrBackupEligibilityChanged = errors.New("passkey backup eligibility changed")
	// ErrStepUpRequired means no fresh step-up grant covers the action.
	ErrStepUpRequired = errors.New("a fresh step-up is required")
	// ErrUnknownAction means a step-up was asked for an action that needs none or does not exist.
	ErrUnknownAction = errors.New("unknown step-up action")
	// ErrBusy means so many anonymous ceremonies are in progress that a new one must wait until
	// some finish or expire (at most the ceremony timeout).
	ErrBusy = errors.New("too many passkey ceremonies in progress")
	// ErrBadOrigin means a ceremony was begun from an origin that is not configured.
	ErrBadOrigin = errors.New("origin is not one of the configured origins")
)

// Defaults for Config.
const (
	DefaultCeremonyTimeout = 3 * time.Minute
	MaxCeremonyTimeout     = 5 * time.Minute
	DefaultSetupLinkTTL    = 15 * time.Minute
	DefaultStepUpWindow    = 5 * time.Minute
	// maxAnonymous bounds the ceremonies anyone who reaches the page can begin (sign-in,
	// unlock, setup); maxOwner those only the signed-in owner can (see putPending).
	maxAnonymous = 1024
	maxOwner     = 64
)

// Config configures the Service.
type Config struct {
	RPID          string   // WebAuthn relying party ID, a domain name
	RPDisplayName string   // shown by authenticators ("Maven")
	Origins       []string // exact origins the browser uses; the first one is used in setup links
	// StepUpWindow is how long a step-up stays valid, from the assertion, never extended.
	StepUpWindow time.Duration
	// CeremonyTimeout bounds every ceremony, from begin to finish (at most MaxCeremonyTimeout).
	CeremonyTimeout time.Duration
	SetupLinkTTL    time.Duration
	Now             func() time.Time // the clock; time.Now when nil
	Logger          *slog.Logger
	// Activity records the security events: passkeys added, renamed and removed, setup links
	// issued. Nil records none.
	Activity Recorder
}

// Recorder appends events to the activity feed (*activity.Log).
type Recorder interface {
	Append(ctx context.Context, events ...activity.Event) error
}

// Service runs the passkey ceremonies and holds, in memory, the ceremonies in progress and the
// step-up grants. Keeping both here rather than in the browser session means no code outside
// this package can forge, alter or replay them. Safe for concurrent use.
type Service struct {
	store Store
	wa    *webauthn.WebAuthn
	cfg   Config
	now   func() time.Time
	log   *slog.Logger

	// boot names this start of the daemon; passkeySets counts the passkeys added or removed
	// since. Together they are the Epoch.
	boot        string
	passkeySets atomic.Int64

	mu      sync.Mutex
	pending map[pendingKey]ceremony
	grants  map[string][]grant   // by session id
	setups  map[string]time.Time // session id → until when its redeemed setup link lets it register
	// markerKey signs browser markers (see RememberBrowser); nil until first read from the store.
	markerKey []byte
}

// New returns a Service over store. The WebAuthn relying party is built once here, with
// ceremony timeouts enforced.
func New(store Store, cfg Config) (*Service, error) {
	if cfg.RPDisplayName == "" {
		cfg.RPDisplayName = "Maven"
	}
	if cfg.StepUpWindow <= 0 {
		cfg.StepUpWindow = DefaultStepUpWindow
	}
	if cfg.CeremonyTimeout <= 0 {
		cfg.CeremonyTimeout = DefaultCeremonyTimeout
	}
	cfg.CeremonyTimeout = min(cfg.CeremonyTimeout, MaxCeremonyTimeout)
	if cfg.SetupLinkTTL <= 0 {
		cfg.SetupLinkTTL = DefaultSetupLinkTTL
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if len(cfg.Origins) == 0 {
		return nil, errors.New("auth: at least one origin is required")
	}
	timeout := webauthn.TimeoutConfig{Enforce: true, Timeout: cfg.CeremonyTimeout, TimeoutUVD: cfg.CeremonyTimeout}
	wa, err := webauthn.New(&webauthn.Config{
		RPID:                  cfg.RPID,
		RPDisplayName:         cfg.RPDisplayName,
		RPOrigins:             slices.Clone(cfg.Origins),
		AttestationPreference: protocol.PreferNoAttestation,
		AuthenticatorSelection: protocol.AuthenticatorSelection{
			ResidentKey:        protocol.ResidentKeyRequirementRequired,
			RequireResidentKey: protocol.ResidentKeyRequired(),
			UserVerification:   protocol.VerificationRequired,
		},
		Timeouts: webauthn.TimeoutsConfig{Login: timeout, Registration: timeout},
	})
	if err != nil {
		return nil, fmt.Errorf("auth: webauthn config: %w", err)
	}
	return &Service{
		store: store, wa: wa, cfg: cfg, now: cfg.Now, log: cfg.Logger, boot: rand.Text(),
		pending: map[pendingKey]ceremony{},
		grants:  map[string][]grant{},
		setups:  map[string]time.Time{},
	}, nil
}

// Epoch names the owner's current set of passkeys in this run of the daemon: it changes at every
// start and whenever a passkey is added or removed. A browser session signed in under another
// epoch is void (docs/security.md#req-13), so a restart, a new passkey or a removed one ends every
// session.
func (s *Service) Epoch() string { return fmt.Sprintf("%s.%d", s.boot, s.passkeySets.Load()) }

// recordEvent appends a security event by actor to the activity feed. The change it records is made
// already, so a failure to record is logged, not returned.
func (s *Service) recordEvent(ctx context.Context, actor, action string, detail map[string]any) {
	if s.cfg.Activity == nil {
		return
	}
	if err := s.cfg.Activity.Append(ctx, activity.Event{Actor: actor, Action: action, Detail: detail}); err != nil {
		s.log.Error("auth: record "+action, "err", err)
	}
}

// checkOrigin returns origin if it is configured; a ceremony is then bound to it alone.
func (s *Service) checkOrigin(origin string) (string, error) {
	if !slices.Contains(s.cfg.Origins, origin) {
		return "", fmt.Errorf("%w: %q", ErrBadOrigin, origin)
	}
	return origin, nil
}

// errUnreadable is the answer to a finish whose response the web layer could not parse: the
// ceremony is consumed all the same.
var errUnreadable = fmt.Errorf("%w: unreadable response", ErrVerificationFailed)

// verificationError wraps a go-webauthn error, keeping its developer detail for the log.
func verificationError(step string, err error) error {
	var pe *protocol.Error
	if errors.As(err, &pe) && pe.DevInfo != "" {
		return fmt.Errorf("%w: %s: %w (%s)", ErrVerificationFailed, step, err, pe.DevInfo)
	}
	return fmt.Errorf("%w: %s: %w", ErrVerificationFailed, step, err)
}
