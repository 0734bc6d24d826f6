package main

import (
	"bufio"
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
)

// unitFile is the systemd unit contrib/ ships.
var unitFile = filepath.Join("..", "..", "contrib", "systemd", "maven.service")

// TestSystemdUnit checks contrib/systemd/maven.service: a dedicated state directory, the
// trade-off of every directive on the comment line above it, and `systemd-analyze verify`
// passing (with ExecStart pointing at the binary just built) wherever systemd is installed.
func TestSystemdUnit(t *testing.T) {
	unit, err := os.ReadFile(unitFile)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(unit, []byte("\nStateDirectory=maven\n")) {
		t.Error("no StateDirectory=maven")
	}
	var prev, section string
	sc := bufio.NewScanner(bytes.NewReader(unit))
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		switch {
		case strings.HasPrefix(line, "["):
			section = line
		case line != "" && !strings.HasPrefix(line, "#") && section == "[Service]" && !strings.HasPrefix(prev, "#"):
			t.Errorf("%s:%d: %q has no comment above it saying what it costs", unitFile, n, line)
		}
		prev = line
	}

	analyze, err := exec.LookPath("systemd-analyze")
	if err != nil {
		t.Skip("systemd-analyze is not installed here, so the unit is not verified; install systemd to verify it")
	}
	dir := t.TempDir()
	verified := bytes.ReplaceAll(unit, []byte("ExecStart=/usr/local/bin/maven "), []byte("ExecStart="+mavenBinary(t)+" "))
	if bytes.Equal(verified, unit) {
		t.Fatal("no ExecStart=/usr/local/bin/maven to point at the built binary")
	}
	path := filepath.Join(dir, "maven.service")
	if err := os.WriteFile(path, verified, 0o644); err != nil {
		t.Fatal(err)
	}
	// Unknown or misspelt keys are only warnings to systemd: any output is a failure here.
	out, err := exec.Command(analyze, "verify", path).CombinedOutput()
	if err != nil || len(bytes.TrimSpace(out)) > 0 {
		t.Fatalf("systemd-analyze verify: %v\n%s", err, out)
	}
}

// TestSystemdUnitStartsAsInstalled runs the unit's ExecStart as systemd would after the README's
// install steps: its arguments and Environment=, STATE_DIRECTORY and CONFIGURATION_DIRECTORY
// set, and no /etc/maven/maven.json yet. It must start on the defaults (a unit that names a
// missing config file loops in Restart=on-failure), and pick the file up at a reload once the
// owner writes it.
func TestSystemdUnitStartsAsInstalled(t *testing.T) {
	unit, err := os.ReadFile(unitFile)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	state, conf := filepath.Join(dir, "var-lib-maven"), filepath.Join(dir, "etc-maven")
	for _, d := range []string{state, conf} {
		if err := os.Mkdir(d, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	var args []string
	env := []string{"PATH=" + os.Getenv("PATH"), "STATE_DIRECTORY=" + state, "CONFIGURATION_DIRECTORY=" + conf,
		"MAVEN_LISTEN=127.0.0.1:0"} // the unit's default port may be taken here
	for line := range strings.SplitSeq(string(unit), "\n") {
		line = strings.ReplaceAll(strings.TrimSpace(line), "/var/lib/maven", state)
		if v, ok := strings.CutPrefix(line, "ExecStart="); ok {
			args = strings.Fields(v)[1:]
		}
		if v, ok := strings.CutPrefix(line, "Environment="); ok {
			env = append(env, v)
		}
	}
	if len(args) == 0 || args[0] != "serve" {
		t.Fatalf("ExecStart runs %q, not maven serve", args)
	}
	cmd := exec.Command(mavenBinary(t), args...)
	cmd.Dir = "/" // systemd's working directory
	cmd.Env = env
	d := runDaemon(t, cmd, state)
	// Logged just after the address the start waits for.
	want := `"msg":"no config file: running on the defaults","file":"` + filepath.Join(conf, "maven.json") + `"`
	if _, ok := d.stderr.Wait(regexp.MustCompile(regexp.QuoteMeta(want)), 10*time.Second); !ok {
		t.Errorf("the start-up log does not name %s:\n%s", want, d.stderr.String())
	}

	cfg := `{"tools": [{"name": "uptime", "argv": ["/usr/bin/uptime"]}]}`
	if err := os.WriteFile(filepath.Join(conf, "maven.json"), []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	if out, err := maven(t, state, "reload"); err != nil {
		t.Fatalf("reload after writing the config: %v\n%s", err, out)
	}
	if out, err := maven(t, state, "tools"); err != nil || !strings.Contains(out, "uptime") {
		t.Fatalf("the config's tool after the reload: %v\n%s", err, out)
	}
	d.stop(t)
}
