package mcptest

import (
	"fmt"
	"os/exec"
	"path/filepath"
)

// CommandPackage is the import path of the scripted-mcp command.
const CommandPackage = "maven/app/mcp/mcptest/scripted-mcp"

// BuildCommand builds scripted-mcp into dir and returns the binary's path. Tests call it once
// per test binary (from TestMain or a sync.Once): a build takes a moment even when cached.
func BuildCommand(dir string) (string, error) {
	goTool, err := exec.LookPath("go")
	if err != nil {
		return "", fmt.Errorf("the go command builds scripted-mcp: %w", err)
	}
	out := filepath.Join(dir, "scripted-mcp")
	cmd := exec.Command(goTool, "build", "-o", out, CommandPackage)
	if b, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("go build %s: %w\n%s", CommandPackage, err, b)
	}
	return out, nil
}
