//go:build !unix && !windows

package mcpproxy

import (
	"os"
	"os/exec"
)

func prepare(*exec.Cmd) {}

func terminate(cmd *exec.Cmd) { _ = cmd.Process.Signal(os.Interrupt) }

func kill(cmd *exec.Cmd) { _ = cmd.Process.Kill() }
