package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"

	"maven/app/activity"
	"maven/app/ipc"
	"maven/app/vault"
)

// errLockedCode is the JSON-RPC error code of a method refused because the daemon is locked.
const errLockedCode = 423

// lockResult is the `lock` IPC result.
type lockResult struct {
	Locked      bool `json:"locked"`
	WasUnlocked bool `json:"was_unlocked"`
	HasVault    bool `json:"has_vault"`
}

// ipcLock locks the daemon: the data key is forgotten, MCP sessions that use secrets end,
// pending voice confirms and step-ups are dropped, and browser sessions are signed out.
func (d *daemon) ipcLock(_ context.Context, params json.RawMessage) (any, error) {
	if err := ipc.DecodeParams(params, &struct{}{}); err != nil {
		return nil, err
	}
	was := d.vault.Lock()
	return lockResult{Locked: d.vault.Locked(), WasUnlocked: was, HasVault: d.vault.HasVault()}, nil
}

// secretSetParams are the `secret_set` IPC params. Value is bytes (base64 in JSON), so a value
// that is not UTF-8 arrives intact.
type secretSetParams struct {
	Name  string `json:"name"`
	Value []byte `json:"value"`
}

// ipcSecretSet seals a secret for the owner's CLI. Whoever reaches the 0600 socket already acts
// as the daemon's user; even so it works only while unlocked, since only an unlocked vault has
// the data key to seal with. It neither enables nor calls a tool: a server waiting for the
// secret dials on its own goroutine, and what it offers is only proposed.
func (d *daemon) ipcSecretSet(ctx context.Context, params json.RawMessage) (any, error) {
	var p secretSetParams
	if err := ipc.DecodeParams(params, &p); err != nil {
		return nil, err
	}
	defer clear(p.Value)
	err := d.vault.SetSecret(ctx, p.Name, p.Value)
	switch {
	case errors.Is(err, vault.ErrLocked):
		msg := "Maven is locked: unlock it at " + d.cfg.Origins[0] + "/unlock first"
		if !d.vault.HasVault() {
			msg = "Maven has no vault yet: register a passkey that supports PRF at " + d.cfg.Origins[0] + " to create one"
		}
		return nil, &ipc.Error{Code: errLockedCode, Message: msg}
	case errors.Is(err, vault.ErrInvalid):
		return nil, &ipc.Error{Code: ipc.InvalidParams, Message: fmt.Sprintf(
			"a secret's name is 1 to 64 of A-Z a-z 0-9 _ . - and its value at most %d bytes", vault.MaxSecretSize)}
	case err != nil:
		return nil, err
	}
	if err := d.events.Append(ctx, activity.Event{Actor: "cli", Action: activity.ActionSecretSet, Detail: map[string]any{"secret": p.Name}}); err != nil {
		d.log.Error("record secret_set", "err", err)
	}
	return struct {
		Name string `json:"name"`
	}{p.Name}, nil
}

func cliLock(ctx context.Context, in *invocation, args []string) error {
	f, rest, _, err := in.parseClient("lock", args, true)
	if err != nil {
		return err
	}
	if len(rest) > 0 {
		return usagef("lock", "lock takes no arguments")
	}
	stdout := in.stdout
	var res lockResult
	if err := f.call(ctx, "lock", nil, &res); err != nil {
		return err
	}
	if f.json {
		return writeJSON(stdout, res)
	}
	switch {
	case !res.HasVault:
		fmt.Fprintln(stdout, "Maven has no vault, so there is nothing to seal; pending confirms and step-ups were dropped.")
	case res.WasUnlocked:
		fmt.Fprintln(stdout, "Maven is locked. Unlock it with your passkey at /unlock.")
	default:
		fmt.Fprintln(stdout, "Maven was already locked.")
	}
	return nil
}

// cliSecret is `maven secret set NAME` and `maven secret list`.
func cliSecret(ctx context.Context, in *invocation, args []string) error {
	f, rest, _, err := in.parseClient("secret", args, true)
	if err != nil {
		return err
	}
	switch {
	case len(rest) == 2 && rest[0] == "set":
		return cliSecretSet(ctx, in, f, rest[1])
	case len(rest) == 1 && rest[0] == "list":
		return cliSecretList(ctx, in, f)
	}
	return usagef("secret", "usage: maven secret set NAME (the value is read from standard input) | maven secret list")
}

// cliSecretSet is `maven secret set NAME`: the value comes from standard input, never from the
// command line, where other users could read it in the process list and the shell would keep
// it in its history.
func cliSecretSet(ctx context.Context, in *invocation, f clientFlags, name string) error {
	if !vault.ValidName(name) {
		return usagef("secret", "a secret's name is 1 to 64 of A-Z a-z 0-9 _ . -")
	}
	value, err := readSecret(in.stdin, in.stderr)
	if err != nil {
		return err
	}
	defer clear(value)
	if len(value) == 0 {
		return errors.New("no value on standard input; nothing was set")
	}
	if err := f.call(ctx, "secret_set", secretSetParams{Name: name, Value: value}, nil); err != nil {
		return err
	}
	fmt.Fprintf(in.stdout, "secret %s is set; servers that use it connect now\n", name)
	return nil
}

// readSecret reads the value: from a terminal, one line without echo; otherwise all of stdin,
// one trailing newline dropped (what `echo` and here-strings add).
func readSecret(stdin io.Reader, stderr io.Writer) ([]byte, error) {
	if file, ok := stdin.(*os.File); ok && isTerminal(file) {
		fmt.Fprint(stderr, "Value (not shown): ")
		b, err := readLineNoEcho(file)
		fmt.Fprintln(stderr)
		if err != nil {
			return nil, fmt.Errorf("read the value: %w", err)
		}
		return b, nil
	}
	b, err := io.ReadAll(io.LimitReader(stdin, vault.MaxSecretSize+2))
	if err != nil {
		return nil, fmt.Errorf("read the value from standard input: %w", err)
	}
	if len(b) > vault.MaxSecretSize+1 {
		clear(b)
		return nil, fmt.Errorf("the value is over %d bytes", vault.MaxSecretSize)
	}
	b = bytes.TrimSuffix(b, []byte("\n"))
	b = bytes.TrimSuffix(b, []byte("\r"))
	return b, nil
}
