package clitest

import (
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sync"
	"testing"
)

// DirEnv names the folder the CLIs are installed in (install.sh's
// argument). Unset, it is InstallDir's default.
const DirEnv = "TOOLGUARD_CLITEST_DIR"

// SourceDir is this package's folder: package.json, package-lock.json and
// install.sh.
func SourceDir() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Dir(file)
}

// InstallDir is where install.sh puts the pinned CLIs: $TOOLGUARD_CLITEST_DIR,
// or toolguard/clitest under the user's cache folder. The install is kept
// between runs and redone only when package-lock.json changes.
func InstallDir() string {
	if d := os.Getenv(DirEnv); d != "" {
		return d
	}
	cache, err := os.UserCacheDir()
	if err != nil {
		cache = os.TempDir()
	}
	return filepath.Join(cache, "toolguard", "clitest")
}

// bins are the CLIs' executables, by agent, in InstallDir.
var bins = map[string]string{
	"claude":   "node_modules/.bin/claude",
	"codex":    "node_modules/.bin/codex",
	"gemini":   "node_modules/.bin/gemini",
	"copilot":  "node_modules/.bin/copilot",
	"opencode": "node_modules/.bin/opencode",
	"cline":    "node_modules/.bin/cline",
	"mcphost":  "bin/mcphost",
}

// RunEnv, set to 1, runs the tests that drive the real agent CLIs. They
// take minutes, so the README's test command (scripts/test.sh) skips them
// and says why; .ci/run's "agent CLIs" block installs the CLIs and runs
// them with it set.
const RunEnv = "TOOLGUARD_CLITEST"

// RequireRun skips t, saying how to run it, without TOOLGUARD_CLITEST=1.
func RequireRun(t testing.TB) {
	t.Helper()
	if os.Getenv(RunEnv) != "1" {
		t.Skip("the end-to-end tests of the real agent CLIs take minutes: run them with " + RunEnv +
			"=1 after `bash " + filepath.Join(SourceDir(), "install.sh") + "` (.ci/run does both)")
	}
}

// Require returns the path of agent's CLI. Without TOOLGUARD_CLITEST=1 it
// skips t (RequireRun); with it, a CLI that is not installed skips t with
// how to install it, and fails t under CI=true.
func Require(t testing.TB, agent string) string {
	t.Helper()
	RequireRun(t)
	path := filepath.Join(InstallDir(), bins[agent])
	if _, err := os.Stat(path); err == nil {
		return path
	}
	msg := agent + " is not installed in " + InstallDir() + ": run `bash " +
		filepath.Join(SourceDir(), "install.sh") + "` (or set " + DirEnv + ")"
	if _, err := exec.LookPath("node"); err != nil && agent != "mcphost" {
		msg = "node is not on PATH; " + msg
	}
	if os.Getenv("CI") == "true" {
		t.Fatal(msg)
	}
	t.Skip(msg)
	return ""
}

var (
	buildOnce sync.Once
	buildDir  string
	buildErr  error
	buildOut  []byte
)

// Toolguard returns the path of the toolguard binary built from this
// repository's tree (once per test process; CleanupToolguard removes it).
func Toolguard(t testing.TB) string {
	t.Helper()
	buildOnce.Do(func() {
		buildDir, buildErr = os.MkdirTemp("", "clitest-toolguard-")
		if buildErr != nil {
			return
		}
		cmd := exec.Command("go", "build", "-o", filepath.Join(buildDir, "toolguard"), "github.com/toolguard/toolguard/cmd/toolguard")
		cmd.Dir = SourceDir()
		buildOut, buildErr = cmd.CombinedOutput()
	})
	if buildErr != nil {
		t.Fatalf("building toolguard: %v\n%s", buildErr, buildOut)
	}
	return filepath.Join(buildDir, "toolguard")
}

// CleanupToolguard removes the binary Toolguard built.
func CleanupToolguard() {
	if buildDir != "" {
		_ = os.RemoveAll(buildDir)
	}
}
