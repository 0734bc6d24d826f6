package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"

	"maven/app/ipc"
	"maven/db"
)

// backupParams are the `backup` IPC params.
type backupParams struct {
	Path string `json:"path"` // absolute; the daemon writes it, as the daemon's user
}

// backupResult is the `backup` IPC result.
type backupResult struct {
	Path  string `json:"path"`
	Bytes int64  `json:"bytes"`
}

// ipcBackup writes a consistent copy of the database while the daemon runs. Whoever reaches the
// 0600 socket already acts as the daemon's user, who can read the database anyway; the copy is
// 0600 and never overwrites a file.
func (d *daemon) ipcBackup(ctx context.Context, params json.RawMessage) (any, error) {
	var p backupParams
	if err := ipc.DecodeParams(params, &p); err != nil {
		return nil, err
	}
	if !filepath.IsAbs(p.Path) {
		return nil, &ipc.Error{Code: ipc.InvalidParams, Message: "the backup's path must be absolute"}
	}
	n, err := d.backup(ctx, p.Path)
	if errors.Is(err, db.ErrBackupExists) {
		return nil, &ipc.Error{Code: ipc.InvalidParams, Message: err.Error()}
	}
	if err != nil {
		return nil, err
	}
	d.log.Info("backup written", "path", p.Path, "bytes", n)
	return backupResult{Path: p.Path, Bytes: n}, nil
}

// cliBackup is `maven backup FILE`.
func cliBackup(ctx context.Context, in *invocation, args []string) error {
	f, rest, _, err := in.parseClient("backup", args, true)
	if err != nil {
		return err
	}
	if len(rest) != 1 {
		return usagef("backup", "usage: maven backup FILE (a new file; the daemon writes it)")
	}
	path, err := filepath.Abs(rest[0])
	if err != nil {
		return err
	}
	var res backupResult
	if err := f.call(ctx, "backup", backupParams{Path: path}, &res); err != nil {
		return err
	}
	if f.json {
		return writeJSON(in.stdout, res)
	}
	fmt.Fprintf(in.stdout, "backup written to %s (%d bytes, mode 0600)\n", res.Path, res.Bytes)
	fmt.Fprintf(in.stdout, "To restore it: stop the daemon, run 'maven restore %s --data %s', start the daemon.\n", res.Path, f.dataDir)
	return nil
}
