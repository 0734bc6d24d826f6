package main

import (
	"bufio"
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
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
