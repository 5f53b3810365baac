//go:build unix

package redistest

import (
	"os"
	"syscall"
)

var sigStop, sigCont os.Signal = syscall.SIGSTOP, syscall.SIGCONT
