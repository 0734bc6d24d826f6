package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime/debug"
	"strings"
	"syscall"
	"testing"
	"time"
)

// runMaven runs the real binary with exactly env and args, and returns what it printed on each
// stream and its exit status.
func runMaven(t *testing.T, env []string, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	cmd := exec.Command(mavenBinary(t), args...)
	cmd.Env = append([]string{"PATH=" + os.Getenv("PATH")}, env...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	var exit *exec.ExitError
	switch {
	case err == nil:
	case errors.As(err, &exit):
		code = exit.ExitCode()
	default:
		t.Fatal(err)
	}
	return out.String(), errb.String(), code
}

// TestFlagsAnywhere: flags before, between and after the arguments; after "--" nothing is a
// flag.
func TestFlagsAnywhere(t *testing.T) {
	data := filepath.Join(t.TempDir(), "data")
	startDaemon(t, data)
	env := []string{"HOME=" + t.TempDir()} // its default data directory holds no daemon
	for _, args := range [][]string{
		{"propose", "hello", "--data", data, "--", "/bin/echo", "hi"},
		{"propose", "--json", "bye", "--data", data, "--", "/bin/echo", "--data", "--json"},
		{"--help"}, // not a command: the usage
	} {
		if out, errb, code := runMaven(t, env, args...); code != 0 {
			t.Fatalf("%q: exit %d\n%s%s", args, code, out, errb)
		}
	}
	rows := map[string]string{}
	for _, r := range toolsJSON(t, data) {
		rows[r.Name] = strings.Join(r.Cmd, " ")
	}
	if rows["hello"] != "/bin/echo hi" || rows["bye"] != "/bin/echo --data --json" {
		t.Fatalf("rows: %q", rows)
	}
	for _, args := range [][]string{{"tools", "--json", "--data", data}, {"tools", "--data", data, "--json"}, {"--data", data, "tools", "--json"}} {
		out, errb, code := runMaven(t, env, args...)
		if args[0] == "--data" {
			// A flag before the command is no command: a usage error that says so.
			if code != 2 || !strings.Contains(errb, `unknown command "--data"`) {
				t.Errorf("%q: exit %d %s", args, code, errb)
			}
			continue
		}
		if code != 0 || !json.Valid([]byte(out)) {
			t.Errorf("%q: exit %d %s%s", args, code, out, errb)
		}
	}
}

// TestHelpOfEveryCommand: `maven CMD --help` prints that command's synopsis and flags to stdout
// and exits 0, as does `maven help CMD`.
func TestHelpOfEveryCommand(t *testing.T) {
	env := []string{"HOME=" + t.TempDir()}
	for _, name := range commandNames() {
		for _, args := range [][]string{{name, "--help"}, {name, "-h"}, {"help", name}} {
			if name == "help" && args[0] == "help" {
				continue
			}
			out, errb, code := runMaven(t, env, args...)
			if code != 0 || errb != "" || !strings.HasPrefix(out, "Usage: maven "+name+" ") {
				t.Errorf("%q: exit %d, stdout %q, stderr %q", args, code, out, errb)
				continue
			}
			if name != "help" && !strings.Contains(out, "-data") {
				t.Errorf("%q: the flags are missing:\n%s", args, out)
			}
		}
	}
	out, _, _ := runMaven(t, env, "serve", "--help")
	for _, flag := range []string{"-config", "-listen", "-log-format", "-log-level"} {
		if !strings.Contains(out, flag) {
			t.Errorf("serve --help lacks %s:\n%s", flag, out)
		}
	}
}

// TestExitStatusAndSuggestions: 0 done, 1 failed, 2 a mistake on the command line, and an
// unknown command suggests the closest.
func TestExitStatusAndSuggestions(t *testing.T) {
	home := t.TempDir()
	env := []string{"HOME=" + home}
	nowhere := filepath.Join(home, ".local", "state", "maven")
	tests := []struct {
		args []string
		code int
		err  string // in stderr
	}{
		{[]string{"serv"}, 2, `unknown command "serv"; did you mean serve?`},
		{[]string{"stauts"}, 2, "did you mean status?"},
		{[]string{"frobnicate"}, 2, `unknown command "frobnicate" (see 'maven help')`},
		{[]string{}, 2, "no command given"},
		{[]string{"status", "extra"}, 2, "status takes no arguments (see 'maven status --help')"},
		{[]string{"status", "--jsn"}, 2, "flag provided but not defined: -jsn"},
		{[]string{"propose", "hello", "/bin/echo"}, 2, "usage: maven propose NAME -- ARGV..."},
		{[]string{"serve", "--log-format", "xml"}, 2, "--log-format is text or json"},
		{[]string{"serve", "--log-level", "loud"}, 2, "--log-level is debug, info, warn or error"},
		{[]string{"help", "nope"}, 2, `no command named "nope"`},
		// Failed: no daemon answers, and the error says where it looked and how to look elsewhere.
		{[]string{"status"}, 1, "maven daemon is not running with data directory " + nowhere + " (no socket at " + nowhere + "/maven.sock): start one with 'maven serve', or pass --data DIR"},
		{[]string{"version"}, 0, ""},
		{[]string{"--version"}, 0, ""},
		{[]string{"-v"}, 0, ""},
		{[]string{"events", "--since", "3x"}, 2, `"3x" is not a duration such as 30m, 2h, 1d or 1w`},
		{[]string{"events", "--since", "0"}, 2, "--since needs a positive duration"},
		{[]string{"events", "--outcome", "nomatch"}, 2, `--outcome is one of ran, confirm, cancelled, refused, needs_args, no_match, locked, error, help, ask, not "nomatch" (did you mean no_match?)`},
		{[]string{"tools", "--state", "enabeld"}, 2, `--state is one of proposed, enabled, disabled, withdrawn, not "enabeld" (did you mean enabled?)`},
		{[]string{"restore"}, 2, "usage: maven restore FILE"},
	}
	for _, tt := range tests {
		_, errb, code := runMaven(t, env, tt.args...)
		if code != tt.code || !strings.Contains(errb, tt.err) {
			t.Errorf("%q: exit %d, stderr %q; want %d and %q", tt.args, code, errb, tt.code, tt.err)
		}
	}
}

// TestDefaultDataDirectory: the data directory is absolute and found the same way by the daemon
// and its clients: systemd's STATE_DIRECTORY, else XDG_STATE_HOME/maven, else
// ~/.local/state/maven; MAVEN_DATA and --data win. The start-up log names it.
func TestDefaultDataDirectory(t *testing.T) {
	home := t.TempDir()
	tests := []struct {
		name string
		env  []string
		want string
	}{
		{"home", []string{"HOME=" + home}, filepath.Join(home, ".local", "state", "maven")},
		{"XDG_STATE_HOME", []string{"HOME=" + home, "XDG_STATE_HOME=" + filepath.Join(home, "xdg")}, filepath.Join(home, "xdg", "maven")},
		{"systemd", []string{"HOME=" + home, "XDG_STATE_HOME=" + filepath.Join(home, "xdg"), "STATE_DIRECTORY=" + filepath.Join(home, "unit") + ":" + filepath.Join(home, "other")}, filepath.Join(home, "unit")},
		{"MAVEN_DATA", []string{"HOME=" + home, "STATE_DIRECTORY=" + filepath.Join(home, "unit"), "MAVEN_DATA=" + filepath.Join(home, "explicit")}, filepath.Join(home, "explicit")},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cmd := exec.Command(mavenBinary(t), "serve", "--listen", "127.0.0.1:0")
			cmd.Dir = t.TempDir()
			cmd.Env = append([]string{"PATH=" + os.Getenv("PATH")}, tt.env...)
			d := runDaemon(t, cmd, tt.want)
			if !strings.Contains(d.stderr.String(), "msg=listening") || !strings.Contains(d.stderr.String(), " data="+tt.want+" ") {
				t.Errorf("the start-up log does not name %s:\n%s", tt.want, d.stderr.String())
			}
			out, errb, code := runMaven(t, tt.env, "status", "--json")
			var st statusResult
			if code != 0 || json.Unmarshal([]byte(out), &st) != nil || st.DataDir != tt.want {
				t.Errorf("status with the same environment: exit %d %s%s", code, out, errb)
			}
			d.stop(t)
		})
	}
	// A relative --data is made absolute.
	dir := t.TempDir()
	cmd := exec.Command(mavenBinary(t), "serve", "--listen", "127.0.0.1:0", "--data", "rel")
	cmd.Dir = dir
	cmd.Env = []string{"PATH=" + os.Getenv("PATH")}
	d := runDaemon(t, cmd, filepath.Join(dir, "rel"))
	if !strings.Contains(d.stderr.String(), " data="+filepath.Join(dir, "rel")+" ") {
		t.Errorf("relative --data:\n%s", d.stderr.String())
	}
}

// TestVersionNamesTheCommit: `maven version` reports the version and the commit the binary was
// built from, as the Go toolchain recorded it (go version -m), and the daemon's.
func TestVersionNamesTheCommit(t *testing.T) {
	info, err := buildInfoOf(mavenBinary(t))
	if err != nil {
		t.Fatal(err)
	}
	want := buildInfoFrom(info)
	data := filepath.Join(t.TempDir(), "data")
	startDaemon(t, data)
	out, errb, code := runMaven(t, nil, "version", "--json", "--data", data)
	var v versionResult
	if code != 0 || json.Unmarshal([]byte(out), &v) != nil {
		t.Fatalf("version --json: exit %d %s%s", code, out, errb)
	}
	if v.Binary != want || v.Daemon == nil || *v.Daemon != want {
		t.Fatalf("version: %+v, want %+v for both", v, want)
	}
	human, _, _ := runMaven(t, nil, "version", "--data", data)
	if !strings.HasPrefix(human, "maven "+want.String()+"\ndaemon "+want.String()+"\n") {
		t.Fatalf("version:\n%s", human)
	}
	if want.Commit == "" {
		t.Logf("this build recorded no commit (GOFLAGS=%q; a git worktree's .git file is not seen as a repository by the go command), so the output says so", os.Getenv("GOFLAGS"))
	} else if !strings.Contains(human, want.Commit[:12]) {
		t.Fatalf("the commit %s is not in:\n%s", want.Commit, human)
	}
	if parsed := buildInfoFrom(&debug.BuildInfo{GoVersion: "go1.26.8", Settings: []debug.BuildSetting{
		{Key: "vcs.revision", Value: "0123456789abcdef0123"}, {Key: "vcs.modified", Value: "true"},
	}}); parsed.String() != version+" (commit 0123456789ab, modified)" {
		t.Fatalf("from build settings: %s", parsed)
	}
}

// buildInfoOf reads the build info of the binary at path.
func buildInfoOf(path string) (*debug.BuildInfo, error) {
	out, err := exec.Command("go", "version", "-m", path).Output()
	if err != nil {
		return nil, err
	}
	info := &debug.BuildInfo{}
	sc := bufio.NewScanner(bytes.NewReader(out))
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		switch {
		case len(f) == 2 && strings.HasSuffix(f[0], ":"):
			info.GoVersion = f[1]
		case len(f) >= 2 && f[0] == "build":
			k, v, _ := strings.Cut(strings.Join(f[1:], " "), "=")
			info.Settings = append(info.Settings, debug.BuildSetting{Key: k, Value: v})
		}
	}
	return info, sc.Err()
}

// TestLogFormatAndLevel: --log-format json writes one JSON object a line; --log-level warn
// leaves out the info lines.
func TestLogFormatAndLevel(t *testing.T) {
	data := filepath.Join(t.TempDir(), "data")
	cmd := daemonCommand(t, mavenBinary(t), data, "--log-format", "json", "--log-level", "debug")
	var logs bytes.Buffer
	cmd.Stderr = &logs
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 20*time.Second, func() bool { _, err := maven(t, data, "status"); return err == nil })
	stopProcess(t, cmd)
	var listening map[string]any
	for line := range strings.Lines(logs.String()) {
		var m map[string]any
		if err := json.Unmarshal([]byte(line), &m); err != nil {
			t.Fatalf("a log line is not JSON: %q", line)
		}
		if m["msg"] == "listening" {
			listening = m
		}
	}
	if listening == nil || listening["data"] != data || listening["level"] != "INFO" {
		t.Fatalf("listening: %v\n%s", listening, logs.String())
	}

	data = filepath.Join(t.TempDir(), "data")
	cmd = daemonCommand(t, mavenBinary(t), data, "--log-level", "warn")
	logs.Reset()
	cmd.Stderr = &logs
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 20*time.Second, func() bool { _, err := maven(t, data, "status"); return err == nil })
	stopProcess(t, cmd)
	if strings.Contains(logs.String(), "level=INFO") {
		t.Fatalf("--log-level warn logged info lines:\n%s", logs.String())
	}
}

// stopProcess sends SIGTERM to cmd and waits for it to exit cleanly.
func stopProcess(t *testing.T, cmd *exec.Cmd) {
	t.Helper()
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if err := cmd.Wait(); err != nil {
		t.Fatalf("exit after SIGTERM: %v", err)
	}
}

// TestCLIAgainstADaemon: what a person reads from the client commands. The daemon's refusals
// are its message alone (no "JSON-RPC error -32602"), --since takes days and weeks, --state
// keeps the rows in that state, `maven -v` is `maven version`, and times are on a 24-hour clock.
func TestCLIAgainstADaemon(t *testing.T) {
	data := filepath.Join(t.TempDir(), "data")
	startDaemon(t, data)
	env := []string{"HOME=" + t.TempDir()}
	if _, errb, code := runMaven(t, env, "propose", "two words", "--data", data, "--", "/bin/echo"); code != 1 ||
		strings.Contains(errb, "JSON-RPC") || !strings.Contains(errb, `maven: invalid tool: name "two words" may only hold letters`) {
		t.Errorf("a refused proposal: exit %d, %q", code, errb)
	}
	if out, errb, code := runMaven(t, env, "propose", "hello", "--data", data, "--", "/bin/echo", "hi"); code != 0 {
		t.Fatalf("propose: %d %s%s", code, out, errb)
	}
	// A command that can never run is proposed, with a warning that says what to write.
	if out, errb, code := runMaven(t, env, "propose", "up", "--data", data, "--", "uptime -p"); code != 0 ||
		!strings.Contains(errb, `warning: the command is one program, run without a shell, and "uptime -p" is not one: give the program and its arguments apart: maven propose up -- uptime -p`) {
		t.Errorf("propose a command line in one string: exit %d, %s%s", code, out, errb)
	}
	if out, _, code := runMaven(t, env, "propose", "build", "--json", "--data", data, "--", "./build.sh"); code != 0 ||
		!strings.Contains(out, `"warnings": [`) || !strings.Contains(out, `relative to the daemon's working directory`) {
		t.Errorf("propose --json a relative path: exit %d, %s", code, out)
	}
	for state, want := range map[string]bool{"proposed": true, "enabled": false} {
		out, errb, code := runMaven(t, env, "tools", "--state", state, "--data", data)
		if code != 0 || strings.Contains(out, "hello") != want {
			t.Errorf("tools --state %s: exit %d, %s%s", state, code, out, errb)
		}
	}
	for _, since := range []string{"1d", "1w", "1d12h", "90m"} {
		out, errb, code := runMaven(t, env, "events", "--since", since, "--data", data)
		if code != 0 || !strings.Contains(out, "hello") {
			t.Errorf("events --since %s: exit %d, %s%s", since, code, out, errb)
		}
	}
	v, errb, code := runMaven(t, env, "-v", "--data", data)
	long, _, _ := runMaven(t, env, "version", "--data", data)
	if code != 0 || v != long || !strings.HasPrefix(v, "maven "+version+" ") {
		t.Errorf("maven -v: exit %d, %q%s; maven version says %q", code, v, errb, long)
	}
	out, _, _ := runMaven(t, env, "setup-link", "--data", data)
	if !regexp.MustCompile(`until ([01]\d|2[0-3]):[0-5]\d:`).MatchString(out) {
		t.Errorf("setup-link's time is not on a 24-hour clock:\n%s", out)
	}
}
