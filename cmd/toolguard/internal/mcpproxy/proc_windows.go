//go:build windows

package mcpproxy

import (
	"os/exec"
	"strconv"
)

// prepare needs nothing on Windows: the tree is found from the server's
// process id when it has to end.
func prepare(*exec.Cmd) {}

// terminate asks the server's process tree to end (npx starts node, for
// one): taskkill /T reaches every process the server started.
func terminate(cmd *exec.Cmd) { taskkill(cmd, false) }

// kill ends the server's process tree.
func kill(cmd *exec.Cmd) { taskkill(cmd, true) }

func taskkill(cmd *exec.Cmd, force bool) {
	args := []string{"/T", "/PID", strconv.Itoa(cmd.Process.Pid)}
	if force {
		args = append([]string{"/F"}, args...)
	}
	if err := exec.Command("taskkill", args...).Run(); err != nil && force {
		_ = cmd.Process.Kill() // taskkill missing or refused: at least the server
	}
}
