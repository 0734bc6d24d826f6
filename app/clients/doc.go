// Package clients is the clients agents connect through (docs/design.md#rule-29): the static
// tokens `maven client add` issues, and Maven's own OAuth 2.1 authorization server, built on
// fosite with its storage here over the Store db implements: dynamic registration, client ID
// metadata documents, the owner's consent, and the tokens it leads to. What a client's agents
// may use is its policy: every enabled tool, now and later, or the rows the owner chose.
//
// It owns who an agent speaks for, and enforces:
//   - a static token is 256 random bits shown once; a client secret too; only their SHA-256 is
//     kept, compared in constant time (AddStatic, Register);
//   - a registration waits for consent at most PendingLifetime, MaxPending at once, and none
//     is evicted for a newer one (Register); a metadata document is fetched over https from a
//     public address only, checked as it is dialled, at most maxDocumentSize bytes within
//     documentTimeout, and cached (documents);
//   - an authorization request takes PKCE S256 only, a redirect URI exactly as registered, and
//     Maven's own resource, bound into every token it leads to (Service.Check, Service.Respond,
//     CheckTokenRequest); the owner's Allow is a step-up naming the request, the client, its
//     redirect URI and the tools ticked (ConsentDigest), in the browser session that was shown
//     it (Service.Consent);
//   - a token works only for its resource, while its client is approved, until it expires
//     (Service.Authenticate); a rotated refresh token shown again revokes its authorization's
//     tokens (fosite, with storage.GetRefreshTokenSession), and is an event of the feed
//     (Service.TokenRefused); Revoke ends every token of a client at once.
//
// It knows HTTP only as fosite's requests and the documents it fetches; handlers serve it.
package clients
