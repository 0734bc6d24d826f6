package voice

// The turn rate: a person speaks a few turns a minute; a leaked token must not be able to
// hammer tools. Options.TurnsPerSecond and Options.Burst (the config's voice block) change it.
// The service spends one token bucket (golang.org/x/time/rate) against Options.Now.
const (
	DefaultTurnsPerSecond = 5
	DefaultBurst          = 30
)
