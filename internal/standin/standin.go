// Package standin lends the hook's session log (cmd/toolguard) the core's
// own masking, so that the stand-ins it keeps in place of a call's
// arguments, result and failure text carry exactly what the Tracker's rules
// compare, computed by the code the rules use, not by an imitation of it.
//
// The root package registers its functions here when it is initialized; a
// program that uses this package imports the root package too (it has a
// Tracker to feed), so they are set before main runs. Nothing here is part
// of the library's public surface.
package standin

var (
	argShape            func(args []byte) string
	resultSum, errorSum func(s string) [32]byte
)

// Register is called by the root package's init: shape is the failure
// rule's argument shape (argScan.shape); result and failure return the
// SHA-256 of a result's text with its noise masked (what digestResult
// hashes) and of a failure's text masked by maskError (what digestError
// hashes).
func Register(shape func([]byte) string, result, failure func(string) [32]byte) {
	argShape, resultSum, errorSum = shape, result, failure
}

// Shape returns the arguments' shape as the failure rule compares it: the
// names and values with every particular masked by the core's maskError,
// cut as the core cuts it.
func Shape(args []byte) string { return argShape(args) }

// ResultSum returns the SHA-256 of the result text with the volatile noise
// masked that the Tracker masks before comparing results: two results the
// Tracker reads as the same have equal sums.
func ResultSum(s string) [32]byte { return resultSum(s) }

// FailureSum returns the SHA-256 of the failure text masked as the
// Tracker's failure signature masks it: two failures the Tracker reads as
// the same have equal sums.
func FailureSum(s string) [32]byte { return errorSum(s) }
