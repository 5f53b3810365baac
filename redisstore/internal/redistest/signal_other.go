//go:build !unix

package redistest

import "os"

var sigStop, sigCont os.Signal
