package main

import (
	"context"
	"errors"
	"fmt"
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
	"maven/internal/daemontest"
)

// setUpOwner registers a's passkey through a setup link and lets it unlock, which makes the
// vault, as the owner's first visit does; it returns the recovery code shown once.
func setUpOwner(t *testing.T, d *daemonProc, a *authtest.Authenticator) string {
	t.Helper()
	link := newSetupLink(t, d.data)
	ctx := context.Background()
	b := daemontest.NewBrowser(d.proc)
	reg, err := b.Register(ctx, link.URL, a, "Phone")
	if err != nil || !reg.PRF {
		t.Fatalf("registration: %v %+v", err, reg)
	}
	var enrolled struct {
		OK           bool   `json:"ok"`
		RecoveryCode string `json:"recovery_code"`
	}
	if err := b.Ceremony(ctx, "/passkeys/"+strconv.FormatInt(reg.ID, 10)+"/enroll/begin", "/passkeys/enroll/finish", map[string]any{}, a.Get, nil, &enrolled); err != nil {
		t.Fatal(err)
	}
	if !enrolled.OK || enrolled.RecoveryCode == "" {
		t.Fatalf("enroll: %+v", enrolled)
	}
	return enrolled.RecoveryCode
}

// TestBackupWhileWritingRestores is issue 15's backup and restore against the real binary: a
// backup taken while another client writes is a consistent copy (each proposal with its event,
// whole or not at all), mode 0600. `maven restore` refuses while the daemon runs; once it is
// stopped, it puts the backup over the database (the data directory 0700, the database 0600, no
// stale WAL or shared memory, the replaced one kept), the daemon boots locked, the same passkey
// unlocks it, and the recovery code opens the sealed secret.
func TestBackupWhileWritingRestores(t *testing.T) {
	dir := t.TempDir()
	data := filepath.Join(dir, "data")
	d := startDaemon(t, data)
	a := authtest.New(d.proc.Origin())
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
	if out, err := maven(t, data, "restore", backup); err == nil || !strings.Contains(out, "a daemon is running on "+data) {
		t.Fatalf("restore while the daemon runs: %v %s", err, out)
	}
	d.stop(t)

	// Restore over the database the backup was taken of, as the README says: the rows written
	// after the backup go, the replaced database is kept beside it.
	restored := data
	if err := os.Chmod(restored, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(restored, "maven.db-shm"), []byte("stale"), 0o600); err != nil {
		t.Fatal(err)
	}
	if out, err := maven(t, restored, "restore", backup); err != nil || !strings.Contains(out, "restored "+backup) {
		t.Fatalf("restore: %v %s", err, out)
	}
	checkRestoredFiles(t, restored)
	d2 := startDaemon(t, restored)
	if h := healthz(t, d2); h != daemonLocked {
		t.Fatalf("the restored daemon boots %s", h)
	}
	a.Origin = d2.proc.Origin() // another port, the same RP ID
	var unlocked struct {
		OK bool `json:"ok"`
	}
	if err := daemontest.NewBrowser(d2.proc).Ceremony(context.Background(), "/unlock/begin", "/unlock/finish", map[string]any{}, a.Get, nil, &unlocked); err != nil {
		t.Fatal(err)
	}
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

// checkRestoredFiles: the data directory is 0700, the database 0600, without the WAL and
// shared memory of the database it replaced, which is kept beside it.
func checkRestoredFiles(t *testing.T, data string) {
	t.Helper()
	if fi, err := os.Stat(data); err != nil || fi.Mode().Perm() != 0o700 {
		t.Errorf("data directory: %v %v", err, fi.Mode())
	}
	if fi, err := os.Stat(filepath.Join(data, "maven.db")); err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("database: %v %v", err, fi.Mode())
	}
	for _, stale := range []string{"maven.db-wal", "maven.db-shm"} {
		if _, err := os.Stat(filepath.Join(data, stale)); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("%s is still there: %v", stale, err)
		}
	}
	if kept, _ := filepath.Glob(filepath.Join(data, "maven.db.replaced-*")); len(kept) != 1 {
		t.Errorf("the replaced database is not kept: %v", kept)
	}
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

// TestRestoreRefusesWhatIsNotABackup: a file that is not an SQLite database is refused, and
// the database stays as it was.
func TestRestoreRefusesWhatIsNotABackup(t *testing.T) {
	dir := t.TempDir()
	data := filepath.Join(dir, "data")
	if err := os.Mkdir(data, 0o700); err != nil {
		t.Fatal(err)
	}
	db := filepath.Join(data, "maven.db")
	notes := filepath.Join(dir, "notes.txt")
	for path, text := range map[string]string{db: "SQLite format 3\x00the current one", notes: "not a database"} {
		if err := os.WriteFile(path, []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	_, errb, code := runMaven(t, []string{"HOME=" + dir}, "restore", notes, "--data", data)
	if code != 1 || !strings.Contains(errb, notes+" is not an SQLite database") {
		t.Errorf("exit %d: %s", code, errb)
	}
	if b, err := os.ReadFile(db); err != nil || string(b) != "SQLite format 3\x00the current one" {
		t.Errorf("the database changed: %q %v", b, err)
	}
}
