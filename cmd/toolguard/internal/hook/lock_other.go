//go:build !unix

package hook

import (
	"errors"
	"os"
)

// lockFile is not available here: the hook keeps no state between
// processes without a lock the system drops on exit, so it lets every call
// run (and says why in errors.log). toolguard serve, a single process,
// guards the sessions on such systems.
func lockFile(*os.File) error {
	return errors.New("the session state needs flock, which this system lacks: use toolguard serve")
}
