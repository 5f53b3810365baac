//go:build unix

package hook

import (
	"os"
	"syscall"
)

// lockFile takes an exclusive lock on f, waiting for it. The kernel drops
// it when f is closed or the process dies.
func lockFile(f *os.File) error {
	for {
		err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX)
		if err != syscall.EINTR {
			return err
		}
	}
}
