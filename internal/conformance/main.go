// Command conformance is the client command the MCP conformance suite
// (npm @modelcontextprotocol/conformance) runs for Maven: given the URL of the suite's mock
// server and the scenario's name in MCP_CONFORMANCE_SCENARIO, it drives the real maven binary
// through the interfaces its owner and voice front end use, and exits 0 only when Maven did
// what the scenario needs.
//
//	conformance -maven PATH [-timeout D] SERVER_URL
//
// It starts `maven serve` with a temporary data directory, a random loopback port and a config
// whose mcpServers names SERVER_URL (http transport); becomes the owner through a one-time
// setup link with a software passkey over HTTP, as the /setup page does; runs the scenario's
// steps (scenarios.go); and stops the daemon with SIGTERM (it kills it when a step fails or the
// time is up, and shows its log). Progress goes to stderr, which the suite keeps as stderr.txt.
// It is test-only: nothing here is linked into maven.
//
// By hand, from the module root (the suite needs Node 22, which `npm ci` installs):
//
//	go build -o /tmp/maven ./cmd/maven && go build -o /tmp/maven-conformance ./internal/conformance
//	node_modules/node/bin/node node_modules/@modelcontextprotocol/conformance/dist/index.js \
//	  client --command "/tmp/maven-conformance -maven /tmp/maven" --scenario initialize
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/url"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"maven/app/auth/authtest"
	"maven/internal/daemontest"
)

// serverName is the name of the suite's server in Maven's config: its rows are scoped
// "mcp:conformance" and its tools' local names start with "conformance_".
const serverName = "conformance"

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	if err := run(ctx, os.Args[1:], os.Getenv, os.Stderr); err != nil {
		fmt.Fprintf(os.Stderr, "maven-conformance: %v\n", err)
		os.Exit(1)
	}
}

// run is the whole command; its error says what Maven did not do.
func run(ctx context.Context, args []string, getenv func(string) string, log io.Writer) error {
	fs := flag.NewFlagSet("maven-conformance", flag.ContinueOnError)
	fs.SetOutput(log)
	bin := fs.String("maven", "", "the maven binary to drive (required)")
	within := fs.Duration("timeout", 25*time.Second, "give up after this long (the suite's own timeout is 30s)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *bin == "" || fs.NArg() != 1 {
		return errors.New("usage: maven-conformance -maven PATH [-timeout D] SERVER_URL")
	}
	name := getenv("MCP_CONFORMANCE_SCENARIO")
	sc, ok := scenarios[name]
	if !ok {
		return fmt.Errorf("no steps for scenario %q in internal/conformance/scenarios.go", name)
	}
	ctx, cancel := context.WithTimeout(ctx, *within)
	defer cancel()

	dir, err := os.MkdirTemp("", "maven-conformance-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	h, err := start(ctx, *bin, dir, fs.Arg(0), behindProxy[name], log)
	if err != nil {
		return err
	}
	h.getenv = getenv
	for i, s := range sc {
		fmt.Fprintf(log, "step %d/%d: %s\n", i+1, len(sc), s.what)
		if err := s.do(ctx, h); err != nil {
			h.fail()
			return fmt.Errorf("scenario %s, step %q: %w", name, s.what, err)
		}
	}
	if err := h.daemon.Stop(10 * time.Second); err != nil {
		h.fail()
		return err
	}
	fmt.Fprintf(log, "scenario %s: Maven did what it needs\n", name)
	return nil
}

// harness is one run of Maven for a scenario: the daemon, its owner signed in on the web, and a
// voice front end's token.
type harness struct {
	bin     string // the maven binary
	daemon  *daemontest.Daemon
	owner   *daemontest.Browser
	passkey *authtest.Authenticator
	// passkeyID is the passkey's id on /passkeys; sealed says whether it was let unlock Maven
	// (which made the vault that OAuth tokens are sealed in).
	passkeyID int64
	sealed    bool
	token     string // bearer token of POST /voice
	cfgPath   string // the config file, which a scenario may change and reload
	serverURL string // the suite's server
	getenv    func(string) string
	log       io.Writer
}

// start starts maven serve for the suite's server at serverURL, with its config and data in dir,
// and makes its owner: the passkey registered through a setup link (which signs the browser in)
// and a voice token.
func start(ctx context.Context, bin, dir, serverURL, httpsOrigin string, log io.Writer) (*harness, error) {
	bin, err := filepath.Abs(bin)
	if err != nil {
		return nil, err
	}
	h := &harness{bin: bin, log: log, serverURL: serverURL}
	conf := map[string]any{"mcpServers": map[string]any{
		serverName: map[string]any{"type": "http", "url": serverURL},
	}}
	if httpsOrigin != "" {
		u, err := url.Parse(httpsOrigin)
		if err != nil {
			return nil, err
		}
		conf["rp_id"], conf["origins"], conf["trusted_proxies"] = u.Hostname(), []string{httpsOrigin}, []string{"127.0.0.1"}
	}
	cfg, err := json.Marshal(conf)
	if err != nil {
		return nil, err
	}
	h.cfgPath = filepath.Join(dir, "maven.json")
	if err := os.WriteFile(h.cfgPath, cfg, 0o600); err != nil {
		return nil, err
	}
	cmd := daemontest.Command(bin, filepath.Join(dir, "data"), dir, "--config", h.cfgPath)
	stopWithParent(cmd)
	if h.daemon, err = daemontest.Start(cmd, filepath.Join(dir, "data"), 15*time.Second); err != nil {
		return nil, err
	}
	context.AfterFunc(ctx, h.daemon.Kill) // a timeout or the suite's SIGTERM leaves no daemon behind
	fmt.Fprintf(log, "maven serve listens on %s, data in %s\n", h.daemon.Addr, h.daemon.Data)

	out, err := h.daemon.CLI(ctx, bin, "setup-link", "--json")
	var link struct {
		URL string `json:"url"`
	}
	if err == nil {
		err = json.Unmarshal([]byte(out), &link)
	}
	if err != nil {
		h.fail()
		return nil, fmt.Errorf("setup link: %w", err)
	}
	h.owner = daemontest.NewBrowser(h.daemon)
	if httpsOrigin != "" {
		h.owner = daemontest.NewBrowserBehindProxy(h.daemon, httpsOrigin)
	}
	h.passkey = authtest.New(h.owner.Origin)
	reg, err := h.owner.Register(ctx, link.URL, h.passkey, "Conformance")
	if err != nil {
		h.fail()
		return nil, fmt.Errorf("register the owner's passkey: %w", err)
	}
	h.passkeyID = reg.ID
	out, err = h.daemon.CLI(ctx, bin, "voice-token", "--rotate")
	if h.token = strings.TrimSpace(out); err != nil || h.token == "" {
		h.fail()
		return nil, fmt.Errorf("voice token: %v %q", err, out)
	}
	return h, nil
}

// fail kills the daemon and copies its log to the command's, for the suite's stderr.txt.
func (h *harness) fail() {
	h.daemon.Kill()
	fmt.Fprintf(h.log, "--- maven serve log ---\n%s--- end of log ---\n", h.daemon.Log.String())
}
