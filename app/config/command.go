package config

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// CommandProblem says why a command can never run as written: a stdio server's command with its
// args, a local tool's argv, `maven propose`'s argv. A command is one program, run without a
// shell: a command line in one string, Windows' cmd /c, a path relative to nowhere in
// particular, or a program that is not there all fail at every start. When the fix is another
// argv, better is that argv, for the caller to write in its own form. msg is "" when nothing is
// plainly wrong. path is PATH as the daemon has it; "" (a config read in an environment that is
// not the daemon's) skips every look-up in the file system. cwd is the server's working
// directory ("" for the daemon's).
func CommandProblem(command string, args []string, cwd, path string) (msg string, better []string) {
	if command == "" || strings.Contains(command, "${") {
		return "", nil // reported elsewhere, or left for the server's own env to expand
	}
	if base := strings.ToLower(filepath.Base(strings.ReplaceAll(command, `\`, "/"))); (base == "cmd" || base == "cmd.exe") &&
		len(args) > 1 && strings.EqualFold(args[0], "/c") {
		return "cmd /c is Windows' shell, which this machine does not have: run the program it starts", args[1:]
	}
	if strings.ContainsAny(command, " \t") && !exists(resolve(command, cwd)) {
		return fmt.Sprintf("the command is one program, run without a shell, and %q is not one: give the program and its arguments apart", command),
			append(strings.Fields(command), args...)
	}
	switch {
	case strings.ContainsRune(command, '/') && !filepath.IsAbs(command) && cwd == "":
		return fmt.Sprintf("%q is relative to the daemon's working directory, which is / under systemd: write its absolute path", command), nil
	case path == "":
		return "", nil
	case strings.ContainsRune(command, '/'):
		return fileProblem(resolve(command, cwd)), nil
	}
	for _, dir := range filepath.SplitList(path) {
		if dir != "" && executable(filepath.Join(dir, command)) {
			return "", nil
		}
	}
	return fmt.Sprintf("%q is not on the daemon's PATH (%s): install it, or write its absolute path", command, path), nil
}

// commandProblem is CommandProblem with the fix, if it is another argv, written by write.
func commandProblem(command string, args []string, cwd, path string, write func([]string) string) string {
	msg, better := CommandProblem(command, args, cwd, path)
	if len(better) > 0 {
		msg += ": " + write(better)
	}
	return msg
}

// resolve is where command is: relative to cwd when it is set.
func resolve(command, cwd string) string {
	if cwd != "" && !filepath.IsAbs(command) {
		return filepath.Join(cwd, command)
	}
	return command
}

// fileProblem says why the program at path cannot run, "" when it can.
func fileProblem(path string) string {
	fi, err := os.Stat(path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return fmt.Sprintf("%s does not exist", path)
	case err != nil:
		return fmt.Sprintf("%s cannot be read: %v", path, err)
	case fi.IsDir():
		return fmt.Sprintf("%s is a directory, not a program", path)
	case fi.Mode().Perm()&0o111 == 0:
		return fmt.Sprintf("%s is not executable (chmod +x)", path)
	}
	return ""
}

func exists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}

func executable(path string) bool {
	fi, err := os.Stat(path)
	return err == nil && !fi.IsDir() && fi.Mode().Perm()&0o111 != 0
}

// serverArgv writes argv as a server's "command" and "args".
func serverArgv(argv []string) string {
	return fmt.Sprintf(`"command": %q, "args": [%s]`, argv[0], quotedList(argv[1:]))
}

// toolArgv writes argv as a local tool's "argv".
func toolArgv(argv []string) string { return fmt.Sprintf(`"argv": [%s]`, quotedList(argv)) }

func quotedList(ss []string) string {
	quoted := make([]string, len(ss))
	for i, a := range ss {
		quoted[i] = strconv.Quote(a)
	}
	return strings.Join(quoted, ", ")
}
