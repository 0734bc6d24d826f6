package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
)

// readerUID is the unprivileged user the non-dumpable test runs both the daemon and the reader
// as: nobody, on Debian and most systems.
const readerUID = 65534

// TestDaemonMemoryIsClosedToItsOwnUser proves the daemon is non-dumpable: a process of the very
// user the daemon runs as cannot open its /proc/PID/mem, while the same reader opens the memory
// of an ordinary process of that user. Root may read any process, so both run as nobody; the
// test needs root to arrange that.
func TestDaemonMemoryIsClosedToItsOwnUser(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root to run the daemon and a reader as another user (CI runs as root); the lock test above covers the rest")
	}
	// Everything both processes run or write lives in a directory nobody can reach.
	shared, err := os.MkdirTemp("", "maven-nondumpable")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(shared) })
	if err := os.Chmod(shared, 0o755); err != nil {
		t.Fatal(err)
	}
	bin := copyExecutable(t, mavenBinary(t), filepath.Join(shared, "maven"))
	reader := copyExecutable(t, os.Args[0], filepath.Join(shared, "reader.test"))
	data := filepath.Join(shared, "data")
	if err := os.Mkdir(data, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Chown(data, readerUID, readerUID); err != nil {
		t.Fatal(err)
	}
	asNobody := &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: readerUID, Gid: readerUID}}

	// The control: a dumpable process of that user is open to the reader.
	sleeper := exec.Command("sleep", "60")
	sleeper.SysProcAttr = asNobody
	if err := sleeper.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { sleeper.Process.Kill(); sleeper.Wait() })
	if got := readMemAs(t, reader, asNobody, sleeper.Process.Pid); got != "ok" {
		t.Fatalf("the reader cannot open a plain process of its own user (%s): the test proves nothing here", got)
	}

	cmd := daemonCommand(t, bin, data)
	cmd.SysProcAttr = asNobody
	cmd.Dir = shared
	cmd.Env = append(cmd.Env, "HOME="+shared)
	d := runDaemon(t, cmd, data)
	if got := readMemAs(t, reader, asNobody, d.cmd.Process.Pid); !strings.Contains(got, "permission denied") {
		t.Fatalf("a process of the daemon's own user opened its memory: %s", got)
	}
	// The owner's path still works on the hardened daemon.
	if out, err := maven(t, data, "status"); err != nil || !strings.Contains(out, "unlocked") {
		t.Fatalf("status of the hardened daemon: %v %s", err, out)
	}
}

// readMemAs runs this test binary as the user of attr to open /proc/PID/mem, and returns "ok"
// or the error it got.
func readMemAs(t *testing.T, reader string, attr *syscall.SysProcAttr, pid int) string {
	t.Helper()
	cmd := exec.Command(reader, "-test.run=^TestMemoryReaderHelper$")
	cmd.Env = []string{"MAVEN_TEST_READ_MEM_OF=" + strconv.Itoa(pid)}
	cmd.SysProcAttr = attr
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("reader: %v\n%s", err, out)
	}
	for line := range strings.Lines(string(out)) {
		if rest, ok := strings.CutPrefix(line, "open mem: "); ok {
			return strings.TrimSpace(rest)
		}
	}
	t.Fatalf("reader said nothing useful:\n%s", out)
	return ""
}

// TestMemoryReaderHelper is the reader process of TestDaemonMemoryIsClosedToItsOwnUser; run
// directly it does nothing.
func TestMemoryReaderHelper(t *testing.T) {
	pid := os.Getenv("MAVEN_TEST_READ_MEM_OF")
	if pid == "" {
		t.Skip("only run as the reader process of TestDaemonMemoryIsClosedToItsOwnUser")
	}
	f, err := os.Open("/proc/" + pid + "/mem")
	if err != nil {
		fmt.Printf("open mem: %v\n", err)
		return
	}
	f.Close()
	fmt.Println("open mem: ok")
}

// copyExecutable copies the file src to dst, mode 0755.
func copyExecutable(t *testing.T, src, dst string) string {
	t.Helper()
	b, err := os.ReadFile(src)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(dst, b, 0o755); err != nil {
		t.Fatal(err)
	}
	return dst
}
