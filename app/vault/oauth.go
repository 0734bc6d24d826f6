package vault

import (
	"context"
	"errors"
	"fmt"
	"strings"
)

// oauthPrefix names a server's sealed OAuth credentials (its tokens and the client Maven
// registered) among the secrets (docs/design.md#rule-22). No secret's name holds a colon
// (ValidName), so the owner's secrets and these never meet, no ${secret:…} reaches them, and
// the data key's rotation reseals them with the rest.
const oauthPrefix = "oauth:"

// SealOAuth seals the OAuth credentials of server, replacing those it had. The caller owns
// value. ErrLocked unless unlocked; ErrInvalid for a value over MaxSecretSize.
func (v *Vault) SealOAuth(ctx context.Context, server string, value []byte) error {
	return v.seal(ctx, oauthPrefix+server, value)
}

// OpenOAuth opens the OAuth credentials of server into a buffer the caller owns and zeroes.
// ErrNotFound if none are sealed, whether or not the vault is locked, so that a server that
// never signed in is told apart from one whose tokens wait for an unlock; then ErrLocked unless
// unlocked; ErrTampered if they fail authentication.
func (v *Vault) OpenOAuth(ctx context.Context, server string) ([]byte, error) {
	s, err := v.store.Secret(ctx, oauthPrefix+server)
	if errors.Is(err, ErrNotFound) {
		return nil, fmt.Errorf("oauth credentials of %s: %w", server, ErrNotFound)
	}
	if err != nil {
		return nil, fmt.Errorf("oauth credentials of %s: %w", server, err)
	}
	return v.open(s)
}

// DeleteOAuth forgets the OAuth credentials of server; none sealed is no error.
func (v *Vault) DeleteOAuth(ctx context.Context, server string) error {
	err := v.store.DeleteSecret(ctx, oauthPrefix+server)
	if err != nil && !errors.Is(err, ErrNotFound) {
		return fmt.Errorf("delete oauth credentials of %s: %w", server, err)
	}
	return nil
}

// OAuthServers lists the servers whose OAuth credentials are sealed, sorted. It reads only
// their names, so it works while locked.
func (v *Vault) OAuthServers(ctx context.Context) ([]string, error) {
	stored, err := v.store.SecretNames(ctx)
	if err != nil {
		return nil, fmt.Errorf("list oauth credentials: %w", err)
	}
	var servers []string
	for _, n := range stored {
		if server, ok := strings.CutPrefix(n, oauthPrefix); ok {
			servers = append(servers, server)
		}
	}
	return servers, nil
}

// SealOAuth seals the OAuth credentials of server; see Vault.SealOAuth. ErrLocked too while no
// vault exists: a token is never kept unsealed.
func (g *Gate) SealOAuth(ctx context.Context, server string, value []byte) error {
	if !g.HasVault() {
		return ErrLocked
	}
	return g.v.SealOAuth(ctx, server, value)
}

// OpenOAuth opens the OAuth credentials of server; see Vault.OpenOAuth. ErrNotFound while no
// vault exists: nothing can have been sealed.
func (g *Gate) OpenOAuth(ctx context.Context, server string) ([]byte, error) {
	if !g.HasVault() {
		return nil, fmt.Errorf("oauth credentials of %s: %w", server, ErrNotFound)
	}
	return g.v.OpenOAuth(ctx, server)
}

// DeleteOAuth forgets the OAuth credentials of server; see Vault.DeleteOAuth.
func (g *Gate) DeleteOAuth(ctx context.Context, server string) error {
	return g.v.DeleteOAuth(ctx, server)
}

// OAuthServers lists the servers whose OAuth credentials are sealed; see Vault.OAuthServers.
func (g *Gate) OAuthServers(ctx context.Context) ([]string, error) {
	return g.v.OAuthServers(ctx)
}
