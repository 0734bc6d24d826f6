package daemontest

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"html"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"time"

	"maven/app/auth"
	"maven/app/auth/authtest"
)

// Browser is the owner's browser against a running daemon, driven as maven.js drives the pages:
// it keeps the session cookie, asks for the daemon's origin as Host (pages and ceremonies
// answer only there, docs/design.md#rule-23) while dialling the address the daemon listens on, and
// sends the Origin and Sec-Fetch-Site of a same-origin page. It never follows redirects, so an
// answer is seen as the daemon gave it.
type Browser struct {
	Origin string // http://localhost:PORT, what the daemon configured for itself
	addr   string // host:port dialled
	base   string // what request URLs start with: http://ADDR, or the origin behind a proxy
	client *http.Client
}

// NewBrowser returns a browser with no session for the daemon d.
func NewBrowser(d *Daemon) *Browser {
	jar, _ := cookiejar.New(nil) // cookiejar.New never fails without options
	return &Browser{Origin: d.Origin(), addr: d.Addr, base: "http://" + d.Addr, client: &http.Client{
		Jar: jar, Timeout: 20 * time.Second,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}}
}

// NewBrowserBehindProxy returns a browser with no session for the daemon d served at the https
// origin through a TLS-terminating reverse proxy, which the browser plays itself: it asks for
// https://ORIGIN/… (so its cookie jar holds Maven's Secure cookies) and sends each request to
// d's address in plain HTTP with X-Forwarded-Proto and X-Forwarded-Host, as a proxy would. d
// must trust 127.0.0.1 as a proxy (trusted_proxies) and name origin in its origins.
func NewBrowserBehindProxy(d *Daemon, origin string) *Browser {
	b := NewBrowser(d)
	b.Origin, b.base = origin, origin
	b.client.Transport = proxyTransport{addr: d.Addr}
	return b
}

// proxyTransport forwards a request for https://HOST/… to addr over plain HTTP, as a proxy that
// terminated TLS for HOST does.
type proxyTransport struct{ addr string }

func (p proxyTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	out := req.Clone(req.Context())
	out.Header.Set("X-Forwarded-Proto", req.URL.Scheme)
	out.Header.Set("X-Forwarded-Host", req.URL.Host)
	out.URL.Scheme, out.URL.Host, out.Host = "http", p.addr, req.URL.Host
	return http.DefaultTransport.RoundTrip(out)
}

// Do sends a request for path with the origin's Host, as a page of the origin would (Origin and
// Sec-Fetch-Site on unsafe methods), and returns the status and the body.
func (b *Browser) Do(ctx context.Context, method, path, contentType string, body []byte) (int, []byte, error) {
	req, err := http.NewRequestWithContext(ctx, method, b.base+path, bytes.NewReader(body))
	if err != nil {
		return 0, nil, err
	}
	req.Host = strings.TrimPrefix(b.Origin, "http://")
	if b.base == b.Origin {
		req.Host = ""
	}
	req.Header.Set("Accept", "text/html")
	if method != http.MethodGet {
		req.Header.Set("Accept", "application/json")
		req.Header.Set("Content-Type", contentType)
		req.Header.Set("Origin", b.Origin)
		req.Header.Set("Sec-Fetch-Site", "same-origin")
	}
	resp, err := b.client.Do(req)
	if err != nil {
		return 0, nil, fmt.Errorf("%s %s: %w", method, path, err)
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	if err != nil {
		return 0, nil, fmt.Errorf("%s %s: %w", method, path, err)
	}
	return resp.StatusCode, raw, nil
}

// PostJSON posts v as maven.js does and decodes the answer into out (unless nil); any answer
// but 200 is an error naming the status and the body.
func (b *Browser) PostJSON(ctx context.Context, path string, v, out any) error {
	body, err := json.Marshal(v)
	if err != nil {
		return err
	}
	status, raw, err := b.Do(ctx, http.MethodPost, path, "application/json", body)
	if err != nil {
		return err
	}
	if status != http.StatusOK {
		return fmt.Errorf("POST %s: %d %s", path, status, bytes.TrimSpace(raw))
	}
	if out != nil {
		if err := json.Unmarshal(raw, out); err != nil {
			return fmt.Errorf("POST %s: %w: %s", path, err, raw)
		}
	}
	return nil
}

// Ceremony runs a WebAuthn begin/finish pair: answer (an authenticator's Create or Get) answers
// the options begin sends, and the answer is posted to finish with the extra fields; finish's
// answer is decoded into out (unless nil).
func (b *Browser) Ceremony(ctx context.Context, begin, finish string, beginBody any, answer func([]byte) ([]byte, error), extra map[string]any, out any) error {
	var opts struct {
		Options json.RawMessage `json:"options"`
	}
	if err := b.PostJSON(ctx, begin, beginBody, &opts); err != nil {
		return err
	}
	cred, err := answer(opts.Options)
	if err != nil {
		return fmt.Errorf("%s: the authenticator: %w", begin, err)
	}
	body := map[string]any{"credential": json.RawMessage(cred)}
	for k, v := range extra {
		body[k] = v
	}
	return b.PostJSON(ctx, finish, body, out)
}

// Registered is what /setup/finish answers.
type Registered struct {
	ID  int64 `json:"id"`
	PRF bool  `json:"prf"`
}

// Register registers a's passkey, named name, through the one-time setup link setupURL (what
// `maven setup-link --json` prints), as the /setup page does; the browser is then signed in.
func (b *Browser) Register(ctx context.Context, setupURL string, a *authtest.Authenticator, name string) (Registered, error) {
	u, err := url.Parse(setupURL)
	if err != nil {
		return Registered{}, fmt.Errorf("setup link: %w", err)
	}
	var reg Registered
	err = b.Ceremony(ctx, "/setup/begin", "/setup/finish", map[string]any{"token": u.Query().Get("token")},
		a.Create, map[string]any{"name": name}, &reg)
	return reg, err
}

// StepUp performs a step-up with a's passkey for exactly approval, as maven.js does when an
// action answers that it needs one: the session then holds a grant for it.
func (b *Browser) StepUp(ctx context.Context, a *authtest.Authenticator, approval auth.Approval) error {
	return b.Ceremony(ctx, "/step-up/begin", "/step-up/finish", approval, a.Get, nil, nil)
}

// ShownRow is a tool row as /tools shows it: the attributes of its element.
type ShownRow struct {
	ID          int64
	Name        string // data-tool-name
	State       string // data-state
	Fingerprint string // data-fingerprint, what an approval of it names
}

var (
	rowRE  = regexp.MustCompile(`<article\b[^>]*\bid="tool-(\d+)"[^>]*>`)
	attrRE = regexp.MustCompile(`\b(data-[a-z-]+)="([^"]*)"`)
)

// Row is row id as /tools shows it when searched for name.
func (b *Browser) Row(ctx context.Context, id int64, name string) (ShownRow, error) {
	path := "/tools?q=" + url.QueryEscape(name)
	status, page, err := b.Do(ctx, http.MethodGet, path, "", nil)
	if err != nil {
		return ShownRow{}, err
	}
	if status != http.StatusOK {
		return ShownRow{}, fmt.Errorf("GET %s: %d %s", path, status, bytes.TrimSpace(page))
	}
	for _, m := range rowRE.FindAllSubmatch(page, -1) {
		if n, _ := strconv.ParseInt(string(m[1]), 10, 64); n != id {
			continue
		}
		row := ShownRow{ID: id}
		for _, a := range attrRE.FindAllSubmatch(m[0], -1) {
			v := html.UnescapeString(string(a[2]))
			switch string(a[1]) {
			case "data-tool-name":
				row.Name = v
			case "data-state":
				row.State = v
			case "data-fingerprint":
				row.Fingerprint = v
			}
		}
		return row, nil
	}
	return ShownRow{}, fmt.Errorf("GET %s shows no row tool-%d", path, id)
}

// Enable enables row id (named name) as the owner does on /tools: the page shows the row, a
// step-up approves enabling it with the fingerprint shown, and the Enable form posts that
// fingerprint.
func (b *Browser) Enable(ctx context.Context, a *authtest.Authenticator, id int64, name string) error {
	return b.actAsShown(ctx, a, auth.ActionEnableTool, id, name, "/tools/"+strconv.FormatInt(id, 10)+"/enable", nil)
}

// SavePhrases saves text (one phrase a line) as the phrases of enabled row id (named name), as
// the owner does with the row's Save phrases button, behind a step-up naming the fingerprint
// shown.
func (b *Browser) SavePhrases(ctx context.Context, a *authtest.Authenticator, id int64, name, text string) error {
	return b.actAsShown(ctx, a, auth.ActionSetPhrases, id, name, "/tools/"+strconv.FormatInt(id, 10)+"/phrases",
		url.Values{"phrases": {text}})
}

// actAsShown posts form to path for row id, as the page showing it would, after a step-up for
// action on the row with the fingerprint shown. Without htmx the daemon answers a done action
// with 303 to /tools; anything else is an error naming the answer.
func (b *Browser) actAsShown(ctx context.Context, a *authtest.Authenticator, action auth.Action, id int64, name, path string, form url.Values) error {
	row, err := b.Row(ctx, id, name)
	if err != nil {
		return err
	}
	if err := b.StepUp(ctx, a, auth.One(action, id, row.Fingerprint)); err != nil {
		return err
	}
	if form == nil {
		form = url.Values{}
	}
	form.Set("fingerprint", row.Fingerprint)
	status, raw, err := b.Do(ctx, http.MethodPost, path, "application/x-www-form-urlencoded", []byte(form.Encode()))
	if err != nil {
		return err
	}
	if status != http.StatusSeeOther {
		return fmt.Errorf("POST %s: %d %s", path, status, bytes.TrimSpace(raw))
	}
	return nil
}
