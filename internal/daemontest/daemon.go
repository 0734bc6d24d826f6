package daemontest

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"regexp"
	"syscall"
	"time"
)

// Daemon is a running `maven serve`. Its methods return errors rather than failing a test, so
// that a command (the conformance client) can drive the daemon as well as a test.
type Daemon struct {
	Cmd  *exec.Cmd
	Addr string // host:port it listens on, as it logged it
	Data string // its data directory
	Log  *Log   // its stderr

	exited  chan struct{} // closed once Wait returned
	waitErr error         // what Wait returned; read after exited is closed
}

// listeningRE finds the address in the daemon's "listening" line, logged as text or as JSON.
var listeningRE = regexp.MustCompile(`msg=listening addr=(\S+)|"msg":"listening","addr":"([^"]+)"`)

// ListenAddr is the address a daemon's log says it listens on, or "" before it says so.
func ListenAddr(log string) string {
	if m := listeningRE.FindStringSubmatch(log); m != nil {
		return m[1] + m[2]
	}
	return ""
}

// Command is `maven serve` of the binary bin on the data directory data, listening on a random
// loopback port, run in dir (where no maven.json lies unless the caller put one there) with only
// PATH and HOME from the environment, and the extra arguments.
func Command(bin, data, dir string, extra ...string) *exec.Cmd {
	args := append([]string{"serve", "--data", data, "--listen", "127.0.0.1:0"}, extra...)
	cmd := exec.Command(bin, args...)
	cmd.Dir = dir
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + os.Getenv("HOME")}
	return cmd
}

// Start starts cmd, a `maven serve` keeping its data in data, and returns once it has logged its
// address and GET /healthz answers 200, within the given time. cmd's Stderr, and its Stdout
// unless set, are taken over: the daemon's log is in Log. If it does not come up, the process
// is killed and the error carries its log.
func Start(cmd *exec.Cmd, data string, within time.Duration) (*Daemon, error) {
	return StartLogged(cmd, data, within, &Log{})
}

// StartLogged is Start writing the daemon's log to log, after what it holds already (the log of
// the same daemon's run before a restart, say).
func StartLogged(cmd *exec.Cmd, data string, within time.Duration, log *Log) (*Daemon, error) {
	pr, pw := io.Pipe()
	d := &Daemon{Cmd: cmd, Data: data, Log: log, exited: make(chan struct{})}
	cmd.Stderr = pw
	if cmd.Stdout == nil {
		cmd.Stdout = pw
	}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start %s: %w", cmd.Path, err)
	}
	go func() {
		d.waitErr = cmd.Wait()
		pw.Close()
		close(d.exited)
	}()
	addr := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(pr)
		sc.Buffer(make([]byte, 0, 64<<10), 1<<20)
		for sc.Scan() {
			line := sc.Text()
			d.Log.Write([]byte(line + "\n"))
			if a := ListenAddr(line); a != "" {
				select {
				case addr <- a:
				default:
				}
			}
		}
		_, _ = io.Copy(io.Discard, pr) // a line over 1 MiB must not block the daemon
	}()
	deadline := time.NewTimer(within)
	defer deadline.Stop()
	select {
	case d.Addr = <-addr:
	case <-d.exited:
		return nil, fmt.Errorf("maven serve exited before listening: %v\n%s", d.waitErr, d.Log.String())
	case <-deadline.C:
		d.Kill()
		return nil, fmt.Errorf("maven serve logged no address within %s\n%s", within, d.Log.String())
	}
	for !d.healthy() {
		select {
		case <-d.exited:
			return nil, fmt.Errorf("maven serve exited before /healthz answered: %v\n%s", d.waitErr, d.Log.String())
		case <-deadline.C:
			d.Kill()
			return nil, fmt.Errorf("GET /healthz did not answer 200 within %s\n%s", within, d.Log.String())
		case <-time.After(time.Millisecond):
		}
	}
	return d, nil
}

// healthClient never reuses a connection, so each poll sees the daemon as a new client does
// (and leaves it no idle connection), and the time to ready is measured to the millisecond.
var healthClient = &http.Client{Timeout: 2 * time.Second, Transport: &http.Transport{DisableKeepAlives: true}}

func (d *Daemon) healthy() bool {
	resp, err := healthClient.Get("http://" + d.Addr + "/healthz")
	if err != nil {
		return false
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp.StatusCode == http.StatusOK
}

// Origin is the browser origin the daemon derives for itself when no origins are configured:
// http://localhost:PORT (RP ID localhost).
func (d *Daemon) Origin() string {
	_, port, _ := net.SplitHostPort(d.Addr)
	return "http://localhost:" + port
}

// Stop sends SIGTERM and waits for the daemon to exit, within the given time; it fails if the
// daemon exits with an error or has to be killed.
func (d *Daemon) Stop(within time.Duration) error {
	select {
	case <-d.exited:
		return fmt.Errorf("maven serve had already exited: %v", d.waitErr)
	default:
	}
	if err := d.Cmd.Process.Signal(syscall.SIGTERM); err != nil {
		return fmt.Errorf("SIGTERM: %w", err)
	}
	select {
	case <-d.exited:
		if d.waitErr != nil {
			return fmt.Errorf("maven serve exit after SIGTERM: %w", d.waitErr)
		}
		return nil
	case <-time.After(within):
		d.Kill()
		return fmt.Errorf("maven serve did not stop within %s of SIGTERM, so it was killed", within)
	}
}

// Kill kills the daemon if it still runs and waits for it to exit.
func (d *Daemon) Kill() {
	select {
	case <-d.exited:
		return
	default:
	}
	_ = d.Cmd.Process.Kill()
	<-d.exited
}

// CLI runs the client command `bin name --data DATA args...` against the daemon, as the owner
// would in a shell, and returns its stdout; on a failure the error carries its stderr.
func (d *Daemon) CLI(ctx context.Context, bin, name string, args ...string) (string, error) {
	argv := append([]string{name, "--data", d.Data}, args...)
	cmd := exec.CommandContext(ctx, bin, argv...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		var exit *exec.ExitError
		if errors.As(err, &exit) {
			return out.String(), fmt.Errorf("maven %s: %w: %s", name, err, bytes.TrimSpace(errb.Bytes()))
		}
		return out.String(), fmt.Errorf("maven %s: %w", name, err)
	}
	return out.String(), nil
}
