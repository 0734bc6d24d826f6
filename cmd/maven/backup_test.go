package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"maven/app/auth/authtest"
	"maven/app/ipc"
	"maven/app/vault"
	"maven/db"
)

// webBrowser stands in for the owner's browser against a real daemon: it keeps cookies and
// sends the Origin and Sec-Fetch-Site a same-origin page sends.
type webBrowser struct {
	t      *testing.T
	origin string // http://localhost:PORT, the daemon's derived origin
	client *http.Client
}

func newWebBrowser(t *testing.T, d *daemonProc) *webBrowser {
	jar, err := cookiejar.New(nil)
	if err != nil {
		t.Fatal(err)
	}
	_, port, _ := strings.Cut(d.addr, ":")
	return &webBrowser{t: t, origin: "http://localhost:" + port, client: &http.Client{Jar: jar, Timeout: 20 * time.Second}}
}

// postJSON posts v as maven.js does and decodes the JSON answer into out; it fails the test
// unless the answer is 200.
func (b *webBrowser) postJSON(path string, v, out any) {
	b.t.Helper()
	body, err := json.Marshal(v)
	if err != nil {
		b.t.Fatal(err)
	}
	req, err := http.NewRequest(http.MethodPost, b.origin+path, bytes.NewReader(body))
	if err != nil {
		b.t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json")
	req.Header.Set("Origin", b.origin)
	req.Header.Set("Sec-Fetch-Site", "same-origin")
	resp, err := b.client.Do(req)
	if err != nil {
		b.t.Fatal(err)
	}
	defer resp.Body.Close()
	var raw bytes.Buffer
	raw.ReadFrom(resp.Body)
	if resp.StatusCode != http.StatusOK {
		b.t.Fatalf("POST %s: %d %s", path, resp.StatusCode, raw.String())
	}
	if out != nil {
		if err := json.Unmarshal(raw.Bytes(), out); err != nil {
			b.t.Fatalf("POST %s: %v: %s", path, err, raw.String())
		}
	}
}

// ceremony runs a WebAuthn begin/finish pair: a answers begin's options with answer (Create or
// Get), and the answer is posted to finish with extra fields.
func (b *webBrowser) ceremony(begin, finish string, beginBody map[string]any, answer func([]byte) ([]byte, error), extra map[string]any, out any) {
	b.t.Helper()
	var opts struct {
		Options json.RawMessage `json:"options"`
	}
	b.postJSON(begin, beginBody, &opts)
	cred, err := answer(opts.Options)
	if err != nil {
		b.t.Fatal(err)
	}
	body := map[string]any{"credential": json.RawMessage(cred)}
	for k, v := range extra {
		body[k] = v
	}
	b.postJSON(finish, body, out)
}

// setUpOwner registers a's passkey through a setup link and lets it unlock, which makes the
// vault, as the owner's first visit does; it returns the recovery code shown once.
func setUpOwner(t *testing.T, d *daemonProc, a *authtest.Authenticator) string {
	t.Helper()
	out, err := maven(t, d.data, "setup-link", "--json")
	var link setupLinkResult
	if err != nil || json.Unmarshal([]byte(out), &link) != nil {
		t.Fatalf("setup-link: %v %s", err, out)
	}
	u, err := url.Parse(link.URL)
	if err != nil {
		t.Fatal(err)
	}
	b := newWebBrowser(t, d)
	var reg struct {
		ID  int64 `json:"id"`
		PRF bool  `json:"prf"`
	}
	b.ceremony("/setup/begin", "/setup/finish", map[string]any{"token": u.Query().Get("token")}, a.Create, map[string]any{"name": "Phone"}, &reg)
	if !reg.PRF {
		t.Fatalf("registration: %+v", reg)
	}
	var enrolled struct {
		OK           bool   `json:"ok"`
		RecoveryCode string `json:"recovery_code"`
	}
	b.ceremony("/passkeys/"+strconv.FormatInt(reg.ID, 10)+"/enroll/begin", "/passkeys/enroll/finish", map[string]any{}, a.Get, nil, &enrolled)
	if !enrolled.OK || enrolled.RecoveryCode == "" {
		t.Fatalf("enroll: %+v", enrolled)
	}
	return enrolled.RecoveryCode
}

// TestBackupWhileWritingRestores is issue 15's backup and restore against the real binary: a
// backup taken while another client writes is a consistent copy (each proposal with its event,
// whole or not at all), mode 0600; restored into a new data directory it boots locked, the same
// passkey unlocks it, and the recovery code opens the sealed secret.
func TestBackupWhileWritingRestores(t *testing.T) {
	dir := t.TempDir()
	data := filepath.Join(dir, "data")
	d := startDaemon(t, data)
	a := authtest.New(newWebBrowser(t, d).origin)
	code := setUpOwner(t, d, a)
	if out, err := secretSet(t, data, "tok", "the-sealed-value"); err != nil {
		t.Fatalf("secret set: %v %s", err, out)
	}

	// A writer proposes tools, each a row and its event in one transaction, as fast as it can.
	var written atomic.Int64
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		sock := filepath.Join(data, "maven.sock")
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			default:
			}
			err := ipc.Call(context.Background(), sock, "propose_tool", proposeParams{Name: fmt.Sprintf("w%d", i), Argv: []string{"/bin/echo", strconv.Itoa(i)}}, nil)
			if err != nil {
				t.Errorf("propose w%d: %v", i, err)
				return
			}
			written.Add(1)
		}
	})
	waitFor(t, 20*time.Second, func() bool { return written.Load() >= 20 })
	before := written.Load()
	backup := filepath.Join(dir, "maven-backup.db")
	out, err := maven(t, data, "backup", backup)
	if err != nil || !strings.Contains(out, "backup written to "+backup) {
		t.Fatalf("backup: %v %s", err, out)
	}
	atBackup := written.Load()
	waitFor(t, 20*time.Second, func() bool { return written.Load() >= atBackup+20 })
	close(stop)
	wg.Wait()
	if fi, err := os.Stat(backup); err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("backup file: %v %v", err, fi)
	}
	if out, err := maven(t, data, "backup", backup); err == nil || !strings.Contains(out, "never overwrites") {
		t.Fatalf("a second backup onto the first: %v %s", err, out)
	}
	d.stop(t)

	// Restore into a new data directory, as the README says.
	restored := filepath.Join(dir, "restored")
	if err := os.Mkdir(restored, 0o700); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(backup)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(restored, "maven.db"), b, 0o600); err != nil {
		t.Fatal(err)
	}
	d2 := startDaemon(t, restored)
	if h := healthz(t, d2); h != daemonLocked {
		t.Fatalf("the restored daemon boots %s", h)
	}
	a.Origin = newWebBrowser(t, d2).origin // another port, the same RP ID
	var unlocked struct {
		OK bool `json:"ok"`
	}
	newWebBrowser(t, d2).ceremony("/unlock/begin", "/unlock/finish", map[string]any{}, a.Get, nil, &unlocked)
	if !unlocked.OK || healthz(t, d2) != daemonUnlocked {
		t.Fatalf("the passkey does not unlock the restored vault: %+v %s", unlocked, healthz(t, d2))
	}
	rows := toolsJSON(t, restored)
	t.Logf("the backup holds %d proposals: %d were written before it started, %d when it ended, %d in all", len(rows), before, atBackup, written.Load())
	if n := int64(len(rows)); n < before || n > atBackup {
		t.Fatalf("the backup holds %d proposals; %d were written before it started and %d when it ended", n, before, atBackup)
	}
	out, err = maven(t, restored, "secret", "list", "--json")
	if err != nil || !strings.Contains(out, `"name": "tok"`) || !strings.Contains(out, `"sealed": true`) {
		t.Fatalf("secret list after restore: %v %s", err, out)
	}
	d2.stop(t)

	checkRestored(t, restored, code, len(rows))
}

// checkRestored opens a restored database while no daemon runs: every tool has its event, the
// passkey is there, and the recovery code opens the sealed secret.
func checkRestored(t *testing.T, data, code string, tools int) {
	t.Helper()
	ctx := context.Background()
	bdb, err := db.Open(ctx, filepath.Join(data, "maven.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer bdb.Close()
	var orphans, events, passkeys int
	for q, into := range map[string]*int{
		"SELECT count(*) FROM tools WHERE id NOT IN (SELECT tool_id FROM tool_events)": &orphans,
		"SELECT count(*) FROM tool_events":                                             &events,
		"SELECT count(*) FROM passkeys":                                                &passkeys,
	} {
		if err := bdb.QueryRowContext(ctx, q).Scan(into); err != nil {
			t.Fatal(err)
		}
	}
	if orphans != 0 || events < tools || passkeys != 1 {
		t.Fatalf("restored: %d tools without an event, %d events for %d tools, %d passkeys", orphans, events, tools, passkeys)
	}
	v := vault.New(db.NewVaultStore(bdb), "localhost", time.Now)
	if err := v.UnlockWithRecovery(ctx, code); err != nil {
		t.Fatalf("the recovery code does not open the restored vault: %v", err)
	}
	value, err := v.Get(ctx, "tok")
	if err != nil || string(value) != "the-sealed-value" {
		t.Fatalf("the sealed secret: %q %v", value, err)
	}
}
