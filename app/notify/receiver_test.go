package notify_test

import (
	"bytes"
	"crypto/aes"
	"crypto/cipher"
	"crypto/ecdh"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/hkdf"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/big"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
)

// pushBrowser is what a browser keeps of one push subscription: its P-256 key pair and
// authentication secret, made here as a browser makes them (RFC 8291, section 2).
type pushBrowser struct {
	key  *ecdh.PrivateKey
	auth []byte
}

func newPushBrowser(t testing.TB) pushBrowser {
	t.Helper()
	key, err := ecdh.P256().GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	auth := make([]byte, 16)
	rand.Read(auth)
	return pushBrowser{key: key, auth: auth}
}

// keys are the subscription's keys as PushSubscription.toJSON() gives them: base64url.
func (b pushBrowser) keys() (p256dh, auth string) {
	return base64.RawURLEncoding.EncodeToString(b.key.PublicKey().Bytes()), base64.RawURLEncoding.EncodeToString(b.auth)
}

// decrypt opens an aes128gcm body (RFC 8188) encrypted to this browser (RFC 8291, section 3.4):
// the header names the salt, the record size and the application server's one-time public
// key; the key and nonce come from HKDF over the ECDH secret and the authentication secret.
// The body is one record, whose padding ends with the delimiter 0x02.
func (b pushBrowser) decrypt(body []byte) ([]byte, error) {
	if len(body) < 21 {
		return nil, errors.New("shorter than the aes128gcm header")
	}
	salt, rs, idLen := body[:16], binary.BigEndian.Uint32(body[16:20]), int(body[20])
	if len(body) < 21+idLen || idLen != 65 {
		return nil, fmt.Errorf("key id of %d bytes, want the 65 of a P-256 point", idLen)
	}
	serverPublic, record := body[21:21+idLen], body[21+idLen:]
	if uint32(len(record)) > rs {
		return nil, fmt.Errorf("a record of %d bytes, over the record size %d: more than one record", len(record), rs)
	}
	asKey, err := ecdh.P256().NewPublicKey(serverPublic)
	if err != nil {
		return nil, err
	}
	shared, err := b.key.ECDH(asKey)
	if err != nil {
		return nil, err
	}
	prkKey, err := hkdf.Extract(sha256.New, shared, b.auth)
	if err != nil {
		return nil, err
	}
	info := "WebPush: info\x00" + string(b.key.PublicKey().Bytes()) + string(serverPublic)
	ikm, err := hkdf.Expand(sha256.New, prkKey, info, 32)
	if err != nil {
		return nil, err
	}
	prk, err := hkdf.Extract(sha256.New, ikm, salt)
	if err != nil {
		return nil, err
	}
	cek, err := hkdf.Expand(sha256.New, prk, "Content-Encoding: aes128gcm\x00", 16)
	if err != nil {
		return nil, err
	}
	nonce, err := hkdf.Expand(sha256.New, prk, "Content-Encoding: nonce\x00", 12)
	if err != nil {
		return nil, err
	}
	block, err := aes.NewCipher(cek)
	if err != nil {
		return nil, err
	}
	gcm, err := cipher.NewGCM(block)
	if err != nil {
		return nil, err
	}
	plain, err := gcm.Open(nil, nonce, record, nil)
	if err != nil {
		return nil, fmt.Errorf("open the record: %w", err)
	}
	end := bytes.LastIndexFunc(plain, func(r rune) bool { return r != 0 })
	if end < 0 || plain[end] != 2 {
		return nil, errors.New("the last record does not end with the padding delimiter 0x02")
	}
	return plain[:end], nil
}

// pushRequest is what a push receiver got: the headers that matter and the decrypted payload.
type pushRequest struct {
	path, contentEncoding, ttl, urgency string
	vapid                               vapidClaims
	payload                             []byte
	err                                 error // why the request is not one a push service accepts
}

// vapidClaims are the claims of a verified VAPID JWT (RFC 8292).
type vapidClaims struct {
	Aud string `json:"aud"`
	Sub string `json:"sub"`
	Exp int64  `json:"exp"`
}

// pushReceiver is a push service on loopback, over TLS as every push service is: it decrypts
// what it gets for its browsers and answers with status.
type pushReceiver struct {
	srv      *httptest.Server
	mu       sync.Mutex
	browsers map[string]pushBrowser // by path
	status   map[string]int         // by path; 201 when not set
	got      chan pushRequest
}

func newPushReceiver(t testing.TB) *pushReceiver {
	p := &pushReceiver{browsers: map[string]pushBrowser{}, status: map[string]int{}, got: make(chan pushRequest, 100)}
	p.srv = httptest.NewTLSServer(http.HandlerFunc(p.serve))
	t.Cleanup(p.srv.Close)
	return p
}

// browser makes a browser subscribed at path, and returns its endpoint.
func (p *pushReceiver) browser(t testing.TB, path string) (pushBrowser, string) {
	b := newPushBrowser(t)
	p.mu.Lock()
	p.browsers[path] = b
	p.mu.Unlock()
	return b, p.srv.URL + path
}

func (p *pushReceiver) answer(path string, status int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.status[path] = status
}

func (p *pushReceiver) serve(w http.ResponseWriter, r *http.Request) {
	p.mu.Lock()
	b, known := p.browsers[r.URL.Path]
	status, set := p.status[r.URL.Path]
	p.mu.Unlock()
	if !set {
		status = http.StatusCreated
	}
	body, _ := io.ReadAll(r.Body)
	req := pushRequest{path: r.URL.Path, contentEncoding: r.Header.Get("Content-Encoding"), ttl: r.Header.Get("TTL"),
		urgency: r.Header.Get("Urgency")}
	if !known {
		req.err = errors.New("no browser subscribed at " + r.URL.Path)
	} else if req.vapid, req.err = verifyVAPID(r.Header.Get("Authorization")); req.err == nil {
		req.payload, req.err = b.decrypt(body)
	}
	p.got <- req
	w.WriteHeader(status)
}

// verifyVAPID checks an Authorization header of the form "vapid t=JWT, k=KEY" (RFC 8292,
// section 3): the JWT is ES256, signed with the private key of the public key k.
func verifyVAPID(header string) (vapidClaims, error) {
	rest, ok := strings.CutPrefix(header, "vapid ")
	if !ok {
		return vapidClaims{}, fmt.Errorf("authorization %q is not vapid", header)
	}
	var token, key string
	for part := range strings.SplitSeq(rest, ",") {
		k, v, _ := strings.Cut(strings.TrimSpace(part), "=")
		switch k {
		case "t":
			token = v
		case "k":
			key = v
		}
	}
	raw, err := base64.RawURLEncoding.DecodeString(key)
	if err != nil {
		return vapidClaims{}, err
	}
	pub, err := ecdsa.ParseUncompressedPublicKey(elliptic.P256(), raw)
	if err != nil {
		return vapidClaims{}, err
	}
	parts := strings.Split(token, ".")
	if len(parts) != 3 {
		return vapidClaims{}, errors.New("not a JWT")
	}
	head, _ := base64.RawURLEncoding.DecodeString(parts[0])
	if !strings.Contains(string(head), `"ES256"`) {
		return vapidClaims{}, fmt.Errorf("JWT header %s is not ES256", head)
	}
	sig, err := base64.RawURLEncoding.DecodeString(parts[2])
	if err != nil || len(sig) != 64 {
		return vapidClaims{}, errors.New("the JWT's signature is not 64 bytes")
	}
	sum := sha256.Sum256([]byte(parts[0] + "." + parts[1]))
	if !ecdsa.Verify(pub, sum[:], new(big.Int).SetBytes(sig[:32]), new(big.Int).SetBytes(sig[32:])) {
		return vapidClaims{}, errors.New("the JWT's signature does not verify with k")
	}
	var c vapidClaims
	claims, _ := base64.RawURLEncoding.DecodeString(parts[1])
	if err := json.Unmarshal(claims, &c); err != nil {
		return vapidClaims{}, err
	}
	return c, nil
}
