package vault

import (
	"context"
	"errors"
	"slices"
)

// SecretUse is one secret that is sealed or that the config refers to: its name, never its
// value.
type SecretUse struct {
	Name string
	// Sealed says whether the vault holds it; nil while locked, when that is not known.
	Sealed *bool
	// Servers are the configured servers that refer to it, sorted; a sealed secret no server
	// refers to has none.
	Servers []string
}

// Missing reports a secret a server refers to that the vault is known not to hold.
func (u SecretUse) Missing() bool { return u.Sealed != nil && !*u.Sealed && len(u.Servers) > 0 }

// Inventory lists, by name, every secret that is sealed or that users names (secret name → the
// servers that refer to it, as config.Config.SecretUsers gives it), with whether the vault
// holds it. locked says the vault is locked, so which secrets are sealed is not known. Without
// a vault nothing is sealed. `maven secret list` and /secrets both show it.
func (g *Gate) Inventory(ctx context.Context, users map[string][]string) (locked bool, out []SecretUse, err error) {
	sealed, err := g.SecretNames(ctx)
	switch {
	case errors.Is(err, ErrLocked) && g.HasVault():
		locked = true
	case errors.Is(err, ErrLocked):
		sealed = nil // no vault, so nothing is sealed
	case err != nil:
		return false, nil, err
	}
	names := slices.Clone(sealed)
	for name := range users {
		names = append(names, name)
	}
	slices.Sort(names)
	out = []SecretUse{}
	for _, name := range slices.Compact(names) {
		use := SecretUse{Name: name, Servers: slices.Sorted(slices.Values(users[name]))}
		if use.Servers == nil {
			use.Servers = []string{}
		}
		if !locked {
			ok := slices.Contains(sealed, name)
			use.Sealed = &ok
		}
		out = append(out, use)
	}
	return locked, out, nil
}
