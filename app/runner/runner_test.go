package runner

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"maven/app/allowlist"
)

// fakeMCP records every call and answers with a canned result.
type fakeMCP struct {
	mu    sync.Mutex
	calls []mcpCall
	res   Result
	err   error
	// block makes CallTool wait for ctx to be done, to test the timeout.
	block bool
}

type mcpCall struct {
	Server, Tool string
	Args         map[string]any
}

func (f *fakeMCP) CallTool(ctx context.Context, server, tool string, args map[string]any) (Result, error) {
	f.mu.Lock()
	f.calls = append(f.calls, mcpCall{server, tool, args})
	f.mu.Unlock()
	if f.block {
		<-ctx.Done()
		return Result{}, ctx.Err()
	}
	return f.res, f.err
}

func (f *fakeMCP) recorded() []mcpCall {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]mcpCall(nil), f.calls...)
}

func enabled(cmd ...string) allowlist.Tool {
	return allowlist.Tool{ID: 1, Name: "t", Cmd: cmd, State: allowlist.StateEnabled}
}

// stored is the allowlist as a test sets it up.
type stored map[int64]allowlist.Tool

func (s stored) Runnable(_ context.Context, id int64) (allowlist.Runnable, error) {
	row, ok := s[id]
	if !ok {
		return allowlist.Runnable{}, allowlist.ErrNotFound
	}
	return allowlist.Runnable{State: row.State, Fingerprint: row.Fingerprint, Cmd: row.Cmd}, nil
}

// executor runs each row over an allowlist that holds exactly that row, as the caller read
// it: the tests of what runs and how use it; TestRowReadAgain is about the read itself.
type executor struct {
	caller    MCPCaller
	opts      Options
	waitDelay time.Duration
}

func newExecutor(caller MCPCaller, opts Options) *executor {
	return &executor{caller: caller, opts: opts}
}

func (x *executor) Exec(ctx context.Context, row allowlist.Tool, args map[string]any) (Result, error) {
	e := New(stored{row.ID: row}, x.caller, x.opts)
	if x.waitDelay != 0 {
		e.waitDelay = x.waitDelay
	}
	return e.Exec(ctx, row, args)
}

func TestLocalArgvIsLiteral(t *testing.T) {
	dir := t.TempDir()
	pwned := filepath.Join(dir, "pwned")
	tests := []struct {
		name string
		cmd  []string
		want string
	}{
		{"semicolon", []string{"/bin/echo", "a;", "touch " + pwned}, "a; touch " + pwned + "\n"},
		{"pipe", []string{"/bin/echo", "a", "|", "touch", pwned}, "a | touch " + pwned + "\n"},
		{"command substitution", []string{"/bin/echo", "$(touch " + pwned + ")"}, "$(touch " + pwned + ")\n"},
		{"backticks", []string{"/bin/echo", "`touch " + pwned + "`"}, "`touch " + pwned + "`\n"},
		{"and", []string{"/bin/echo", "x", "&&", "touch", pwned}, "x && touch " + pwned + "\n"},
		{"globs and vars", []string{"/bin/printf", `%s\n`, "*", "$HOME", "~", "a b"}, "*\n$HOME\n~\na b\n"},
		{"redirect", []string{"/bin/printf", `%s\n`, ">" + pwned}, ">" + pwned + "\n"},
	}
	e := newExecutor(nil, Options{})
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res, err := e.Exec(t.Context(), enabled(tt.cmd...), nil)
			if err != nil {
				t.Fatalf("Exec: %v", err)
			}
			want := Result{Output: tt.want}
			if diff := cmp.Diff(want, res); diff != "" {
				t.Errorf("Exec result (-want +got):\n%s", diff)
			}
			if _, err := os.Stat(pwned); !errors.Is(err, fs.ErrNotExist) {
				t.Fatalf("%s exists: a shell ran the argv", pwned)
			}
		})
	}
}

func TestLocalExitStatus(t *testing.T) {
	tests := []struct {
		name string
		cmd  []string
		want Result
	}{
		{"success", []string{"/bin/true"}, Result{}},
		{"failure", []string{"/bin/false"}, Result{ExitCode: 1, IsError: true}},
		{"stderr and status", []string{"/bin/sh", "-c", "echo oops >&2; exit 3"},
			Result{Output: "oops\n", ExitCode: 3, IsError: true}},
		{"streams interleaved in order", []string{"/bin/sh", "-c", "echo a; echo b >&2; echo c"},
			Result{Output: "a\nb\nc\n"}},
		{"stdin is empty", []string{"/bin/sh", "-c", "cat; echo done"}, Result{Output: "done\n"}},
		{"killed by a signal", []string{"/bin/sh", "-c", "kill -9 $$"}, Result{ExitCode: -1, IsError: true}},
	}
	e := newExecutor(nil, Options{})
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res, err := e.Exec(t.Context(), enabled(tt.cmd...), nil)
			if err != nil {
				t.Fatalf("Exec: %v (a non-zero exit is not a Go error)", err)
			}
			if diff := cmp.Diff(tt.want, res); diff != "" {
				t.Errorf("Exec result (-want +got):\n%s", diff)
			}
		})
	}
}

// TestTimeoutKillsProcessGroup runs a shell that leaves a background child: both must be dead
// soon after the timeout, not 30 s later.
func TestTimeoutKillsProcessGroup(t *testing.T) {
	dir := t.TempDir()
	pids := filepath.Join(dir, "pids")
	e := newExecutor(nil, Options{Timeout: 200 * time.Millisecond})
	row := enabled("/bin/sh", "-c", `sleep 30 & echo $$ $! > "$1"; sleep 30`, "sh", pids)

	start := time.Now()
	res, err := e.Exec(t.Context(), row, nil)
	elapsed := time.Since(start)
	if !errors.Is(err, ErrTimeout) {
		t.Fatalf("Exec error = %v, want ErrTimeout", err)
	}
	if !strings.Contains(err.Error(), "200ms") {
		t.Errorf("error %q does not say the timeout", err)
	}
	if elapsed > 5*time.Second {
		t.Errorf("Exec took %s, want well under 30s", elapsed)
	}
	if !res.IsError {
		t.Errorf("IsError = false after a timeout")
	}

	b, err := os.ReadFile(pids)
	if err != nil {
		t.Fatalf("reading pid file: %v", err)
	}
	for _, f := range strings.Fields(string(b)) {
		pid, err := strconv.Atoi(f)
		if err != nil {
			t.Fatalf("bad pid %q: %v", f, err)
		}
		waitGone(t, pid)
	}
}

// TestParentCancel checks that a cancelled caller is reported as such, not as a timeout.
func TestParentCancel(t *testing.T) {
	ctx, cancel := context.WithCancel(t.Context())
	time.AfterFunc(100*time.Millisecond, cancel)
	e := newExecutor(nil, Options{Timeout: time.Minute})
	_, err := e.Exec(ctx, enabled("/bin/sleep", "30"), nil)
	if !errors.Is(err, context.Canceled) || errors.Is(err, ErrTimeout) {
		t.Fatalf("Exec error = %v, want context.Canceled and not ErrTimeout", err)
	}
}

// TestChildHoldingPipes checks a command that exits but leaves a child with its stdout open
// does not hang Exec.
func TestChildHoldingPipes(t *testing.T) {
	pids := filepath.Join(t.TempDir(), "pids")
	e := newExecutor(nil, Options{})
	e.waitDelay = 100 * time.Millisecond
	row := enabled("/bin/sh", "-c", `sleep 30 & echo $! > "$1"; echo hi`, "sh", pids)

	start := time.Now()
	res, err := e.Exec(t.Context(), row, nil)
	elapsed := time.Since(start)
	if b, err := os.ReadFile(pids); err == nil {
		if pid, err := strconv.Atoi(strings.TrimSpace(string(b))); err == nil {
			t.Cleanup(func() { syscall.Kill(pid, syscall.SIGKILL) })
		}
	}
	if err != nil {
		t.Fatalf("Exec: %v", err)
	}
	if diff := cmp.Diff(Result{Output: "hi\n"}, res); diff != "" {
		t.Errorf("Exec result (-want +got):\n%s", diff)
	}
	if elapsed > 5*time.Second {
		t.Errorf("Exec took %s: the child's pipe held it", elapsed)
	}
}

func TestOutputCapped(t *testing.T) {
	const limit = 1024
	e := newExecutor(nil, Options{MaxOutput: limit})
	row := enabled("/usr/bin/head", "-c", "10000000", "/dev/zero")

	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	res, err := e.Exec(t.Context(), row, nil)
	runtime.ReadMemStats(&after)
	if err != nil {
		t.Fatalf("Exec: %v", err)
	}
	want := Result{
		Output:    strings.Repeat("\x00", limit) + "\n[output cut at 1024 bytes, 9998976 more dropped]",
		Truncated: true,
	}
	if diff := cmp.Diff(want, res); diff != "" {
		t.Errorf("Exec result (-want +got):\n%s", diff)
	}
	// 10 MB went through; what Exec allocated must stay far below that.
	if alloc := after.TotalAlloc - before.TotalAlloc; alloc > 2<<20 {
		t.Errorf("Exec allocated %d bytes for a %d-byte cap", alloc, limit)
	}
}

func TestOutputCutKeepsUTF8(t *testing.T) {
	e := newExecutor(nil, Options{MaxOutput: 5})
	res, err := e.Exec(t.Context(), enabled("/bin/printf", "abcd€€"), nil)
	if err != nil {
		t.Fatalf("Exec: %v", err)
	}
	want := Result{Output: "abcd\n[output cut at 4 bytes, 6 more dropped]", Truncated: true}
	if diff := cmp.Diff(want, res); diff != "" {
		t.Errorf("Exec result (-want +got):\n%s", diff)
	}
}

func TestMissingBinary(t *testing.T) {
	tests := []struct {
		name   string
		binary string
		is     error
	}{
		{"absolute path", "/nonexistent/maven-no-such-tool", fs.ErrNotExist},
		{"looked up in PATH", "maven-no-such-tool", exec.ErrNotFound},
	}
	e := newExecutor(nil, Options{})
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := e.Exec(t.Context(), enabled(tt.binary, "x"), nil)
			if !errors.Is(err, tt.is) {
				t.Fatalf("Exec error = %v, want one wrapping %v", err, tt.is)
			}
			if !strings.Contains(err.Error(), tt.binary) {
				t.Errorf("error %q does not name %s", err, tt.binary)
			}
		})
	}
}

// TestEnvMinimal checks the child sees PATH, HOME and LANG and nothing else: not a secret in the
// injected environment, and not the test process's own environment either.
func TestEnvMinimal(t *testing.T) {
	t.Setenv("MAVEN_TEST_REAL_SECRET", "leaked-from-os")
	daemonEnv := map[string]string{
		"PATH":             "/usr/bin:/bin",
		"HOME":             "/home/maven",
		"LANG":             "C.UTF-8",
		"VIKUNJA_TOKEN":    "hunter2",
		"AWS_SECRET_KEY":   "hunter3",
		"MAVEN_TEST_EXTRA": "x",
	}
	e := newExecutor(nil, Options{Getenv: func(k string) string { return daemonEnv[k] }})
	res, err := e.Exec(t.Context(), enabled("/usr/bin/env"), nil)
	if err != nil {
		t.Fatalf("Exec: %v", err)
	}
	got := strings.Fields(res.Output)
	want := []string{"HOME=/home/maven", "LANG=C.UTF-8", "PATH=/usr/bin:/bin"}
	slices.Sort(got)
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("child env (-want +got):\n%s", diff)
	}
}

func TestEnvEmptyIsNotInherited(t *testing.T) {
	t.Setenv("MAVEN_TEST_REAL_SECRET", "leaked-from-os")
	e := newExecutor(nil, Options{Getenv: func(string) string { return "" }})
	res, err := e.Exec(t.Context(), enabled("/usr/bin/env"), nil)
	if err != nil {
		t.Fatalf("Exec: %v", err)
	}
	if res.Output != "" {
		t.Errorf("child env = %q, want empty", res.Output)
	}
}

func TestLocalArgsRefused(t *testing.T) {
	marker := filepath.Join(t.TempDir(), "ran")
	e := newExecutor(nil, Options{})
	_, err := e.Exec(t.Context(), enabled("/usr/bin/touch", marker), map[string]any{"x": "y"})
	if !errors.Is(err, ErrLocalArgs) {
		t.Fatalf("Exec error = %v, want ErrLocalArgs", err)
	}
	if _, err := os.Stat(marker); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("the command ran although its args were refused")
	}
	// An empty map is no arguments.
	if _, err := e.Exec(t.Context(), enabled("/bin/true"), map[string]any{}); err != nil {
		t.Errorf("Exec with empty args: %v", err)
	}
}

func TestNotEnabledRefused(t *testing.T) {
	states := []allowlist.State{allowlist.StateProposed, allowlist.StateDisabled, allowlist.StateWithdrawn, ""}
	for _, st := range states {
		t.Run(string(st), func(t *testing.T) {
			marker := filepath.Join(t.TempDir(), "ran")
			fake := &fakeMCP{}
			e := newExecutor(fake, Options{})

			local := enabled("/usr/bin/touch", marker)
			local.State = st
			if _, err := e.Exec(t.Context(), local, nil); !errors.Is(err, ErrNotEnabled) {
				t.Errorf("local: Exec error = %v, want ErrNotEnabled", err)
			}
			if _, err := os.Stat(marker); !errors.Is(err, fs.ErrNotExist) {
				t.Errorf("local: a %q row ran", st)
			}

			remote := enabled("mcp", "vikunja", "list_tasks")
			remote.State = st
			if _, err := e.Exec(t.Context(), remote, nil); !errors.Is(err, ErrNotEnabled) {
				t.Errorf("mcp: Exec error = %v, want ErrNotEnabled", err)
			}
			if calls := fake.recorded(); len(calls) != 0 {
				t.Errorf("mcp: a %q row was called: %v", st, calls)
			}
		})
	}
}

// installFakeMCPBinary puts an executable named "mcp" first in PATH that leaves a marker file
// if it ever runs, so routing mistakes show up as a file, not as a silent "not found".
func installFakeMCPBinary(t *testing.T) (marker string) {
	t.Helper()
	dir := t.TempDir()
	marker = filepath.Join(dir, "mcp-binary-ran")
	script := "#!/bin/sh\ntouch " + marker + "\n"
	if err := os.WriteFile(filepath.Join(dir, "mcp"), []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", dir+string(os.PathListSeparator)+os.Getenv("PATH"))
	return marker
}

func TestMCPRouting(t *testing.T) {
	marker := installFakeMCPBinary(t)
	tests := []struct {
		name     string
		cmd      []string
		args     map[string]any
		wantCall mcpCall
	}{
		{"plain", []string{"mcp", "vikunja", "list_tasks"}, map[string]any{"q": "milk"},
			mcpCall{"vikunja", "list_tasks", map[string]any{"q": "milk"}}},
		{"nil args become {}", []string{"mcp", "memory", "read_graph"}, nil,
			mcpCall{"memory", "read_graph", map[string]any{}}},
		{"server looks like a binary", []string{"mcp", "/bin/echo", "x"}, nil,
			mcpCall{"/bin/echo", "x", map[string]any{}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fake := &fakeMCP{res: Result{Output: "from mcp"}}
			e := newExecutor(fake, Options{})
			res, err := e.Exec(t.Context(), enabled(tt.cmd...), tt.args)
			if err != nil {
				t.Fatalf("Exec: %v", err)
			}
			if diff := cmp.Diff(Result{Output: "from mcp"}, res); diff != "" {
				t.Errorf("Exec result (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff([]mcpCall{tt.wantCall}, fake.recorded()); diff != "" {
				t.Errorf("MCP calls (-want +got):\n%s", diff)
			}
			if _, err := os.Stat(marker); !errors.Is(err, fs.ErrNotExist) {
				t.Errorf("an mcp row was run as a binary")
			}
		})
	}
}

func TestMCPMalformedOrMissing(t *testing.T) {
	marker := installFakeMCPBinary(t)
	tests := []struct {
		name   string
		cmd    []string
		nilMCP bool
		want   error
	}{
		{"mcp alone", []string{"mcp"}, false, ErrBadCmd},
		{"no tool", []string{"mcp", "vikunja"}, false, ErrBadCmd},
		{"too many", []string{"mcp", "/bin/echo", "x", "y"}, false, ErrBadCmd},
		{"empty server", []string{"mcp", "", "x"}, false, ErrBadCmd},
		{"empty tool", []string{"mcp", "vikunja", ""}, false, ErrBadCmd},
		{"empty cmd", nil, false, ErrBadCmd},
		{"no MCP manager", []string{"mcp", "vikunja", "list_tasks"}, true, ErrNoMCP},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fake := &fakeMCP{}
			var caller MCPCaller = fake
			if tt.nilMCP {
				caller = nil
			}
			e := newExecutor(caller, Options{})
			if _, err := e.Exec(t.Context(), enabled(tt.cmd...), nil); !errors.Is(err, tt.want) {
				t.Errorf("Exec error = %v, want %v", err, tt.want)
			}
			if calls := fake.recorded(); len(calls) != 0 {
				t.Errorf("MCP was called: %v", calls)
			}
			if _, err := os.Stat(marker); !errors.Is(err, fs.ErrNotExist) {
				t.Errorf("an mcp row was run as a binary")
			}
		})
	}
}

func TestMCPResults(t *testing.T) {
	callErr := errors.New("server vikunja is locked")
	tests := []struct {
		name    string
		fake    *fakeMCP
		opts    Options
		want    Result
		wantErr error
	}{
		{name: "error result is not a Go error",
			fake: &fakeMCP{res: Result{Output: "no such project", IsError: true}},
			want: Result{Output: "no such project", IsError: true}},
		{name: "call error is wrapped",
			fake: &fakeMCP{err: callErr}, wantErr: callErr},
		{name: "timeout",
			fake: &fakeMCP{block: true}, opts: Options{Timeout: 50 * time.Millisecond}, wantErr: ErrTimeout},
		{name: "long text is cut",
			fake: &fakeMCP{res: Result{Output: strings.Repeat("a", 20)}}, opts: Options{MaxOutput: 8},
			want: Result{Output: "aaaaaaaa\n[output cut at 8 bytes, 12 more dropped]", Truncated: true}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := newExecutor(tt.fake, tt.opts)
			res, err := e.Exec(t.Context(), enabled("mcp", "vikunja", "list_tasks"), nil)
			if !errors.Is(err, tt.wantErr) {
				t.Fatalf("Exec error = %v, want %v", err, tt.wantErr)
			}
			if err != nil && !strings.Contains(err.Error(), "vikunja/list_tasks") {
				t.Errorf("error %q does not name the tool", err)
			}
			if diff := cmp.Diff(tt.want, res); diff != "" {
				t.Errorf("Exec result (-want +got):\n%s", diff)
			}
		})
	}
}

func BenchmarkExecEcho(b *testing.B) {
	e := newExecutor(nil, Options{})
	row := enabled("/bin/true")
	ctx := b.Context()
	for b.Loop() {
		if _, err := e.Exec(ctx, row, nil); err != nil {
			b.Fatal(err)
		}
	}
}

// waitGone polls until pid no longer exists (or is a zombie awaiting its reaper), failing the
// test if it outlives the deadline.
func waitGone(t *testing.T, pid int) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for !processGone(pid) {
		if time.Now().After(deadline) {
			syscall.Kill(pid, syscall.SIGKILL)
			t.Fatalf("process %d still alive after the timeout", pid)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func processGone(pid int) bool {
	if err := syscall.Kill(pid, 0); errors.Is(err, syscall.ESRCH) {
		return true
	}
	// A killed process whose parent has not reaped it yet still answers signal 0.
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return errors.Is(err, fs.ErrNotExist)
	}
	s := string(b)
	if i := strings.LastIndexByte(s, ')'); i >= 0 && i+2 < len(s) {
		return s[i+2] == 'Z'
	}
	return false
}
