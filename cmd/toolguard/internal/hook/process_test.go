//go:build unix

package hook

import (
	"fmt"
	"math/rand"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/toolguard/toolguard"
)

// The test binary runs as "toolguard hook" when TOOLGUARD_HOOK_TEST_MAIN is
// set, so that tests can start hook processes (and kill them).
func TestMain(m *testing.M) {
	if os.Getenv("TOOLGUARD_HOOK_TEST_MAIN") == "1" {
		os.Exit(Main(os.Args[1:], Env{Stdin: os.Stdin, Stdout: os.Stdout, Stderr: os.Stderr}))
	}
	os.Exit(m.Run())
}

// hookProc returns a command running "hook ARGS" in a new process with
// the state under state.
func hookProc(t testing.TB, state, payload string, args ...string) *exec.Cmd {
	exe, err := os.Executable()
	require.NoError(t, err)
	cmd := exec.Command(exe, args...)
	cmd.Env = append(os.Environ(), "TOOLGUARD_HOOK_TEST_MAIN=1", "XDG_STATE_HOME="+state, "HOME="+state+"/home",
		"TOOLGUARD_HOOK=", "TOOLGUARD_EXEMPT=")
	cmd.Stdin = strings.NewReader(payload)
	return cmd
}

// TestParallelProcesses: rounds of parallel calls, each hook a process of
// its own, all at once: every call is checked once and recorded once, each
// process answered what the log says it decided, and a replay of the log
// decides the same.
func TestParallelProcesses(t *testing.T) {
	state := t.TempDir()
	const rounds, width = 4, 8
	answers := map[string]string{}
	var mu sync.Mutex
	for r := 0; r < rounds; r++ {
		var wg sync.WaitGroup
		for i := 0; i < width; i++ {
			wg.Add(1)
			go func(i int) {
				defer wg.Done()
				id := fmt.Sprintf("r%dc%d", r, i)
				cmd := fmt.Sprintf("cat file%d", i%3) // repeats within and across rounds
				out, err := hookProc(t, state, claudePre("P", id, cmd), "run", "--agent", "claude").Output()
				assert.NoError(t, err)
				mu.Lock()
				answers[id] = string(out)
				mu.Unlock()
				if len(out) == 0 {
					_, err := hookProc(t, state, claudePost("P", id, cmd, "same"), "run", "--agent", "claude").Output()
					assert.NoError(t, err)
				}
			}(i)
		}
		wg.Wait()
	}
	e := NewEngine(claudeAgent, cliPolicy(claudeAgent, nil), filepath.Join(state, "toolguard"), nil)
	path := filepath.Join(e.sessionDir("P"), "log")
	recs := readLog(t, path)
	pres, posts := map[string]int{}, map[string]int{}
	for _, r := range recs {
		switch r.K {
		case "pre":
			pres[r.ID]++
			denied := strings.Contains(answers[r.ID], `"deny"`)
			assert.Equal(t, r.V != toolguard.Allow, denied, "call %s: logged %s, answered %q", r.ID, r.V, answers[r.ID])
		case "post":
			posts[r.ID]++
		}
	}
	require.Len(t, pres, rounds*width)
	for id, n := range pres {
		require.Equal(t, 1, n, id)
		require.LessOrEqual(t, posts[id], 1, id)
	}
	logDecisions(t, e, "P")
	st, err := os.Stat(path)
	require.NoError(t, err)
	assert.Equal(t, os.FileMode(0o600), st.Mode().Perm())
	st, err = os.Stat(filepath.Dir(path))
	require.NoError(t, err)
	assert.Equal(t, os.FileMode(0o700), st.Mode().Perm())
}

// TestKilledProcesses: hook processes killed with SIGKILL at random points,
// many at once: the log holds only whole records, no call is checked twice,
// and the next invocation decides from what is there.
func TestKilledProcesses(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a few hundred processes")
	}
	state := t.TempDir()
	rng := rand.New(rand.NewSource(1))
	killed := 0
	for batch := 0; batch < 12; batch++ {
		var wg sync.WaitGroup
		for i := 0; i < 8; i++ {
			id := fmt.Sprintf("b%di%d", batch, i)
			cmd := hookProc(t, state, claudePre("K", id, fmt.Sprint("make t", i%2)), "run", "--agent", "claude")
			require.NoError(t, cmd.Start())
			// Most at a random point of the run; some late enough to finish.
			delay := time.Duration(rng.Intn(8000)) * time.Microsecond
			if i%4 == 0 {
				delay = 300 * time.Millisecond
			}
			wg.Add(1)
			go func() {
				defer wg.Done()
				time.Sleep(delay)
				_ = cmd.Process.Signal(syscall.SIGKILL)
				_ = cmd.Wait()
				if ws, ok := cmd.ProcessState.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
					mu.Lock()
					killed++
					mu.Unlock()
				}
			}()
		}
		wg.Wait()
	}
	t.Logf("%d of 96 processes killed, the others had finished", killed)
	require.Greater(t, killed, 0)
	// A torn last line, as a write cut short leaves it.
	e := NewEngine(claudeAgent, cliPolicy(claudeAgent, nil), filepath.Join(state, "toolguard"), nil)
	path := filepath.Join(e.sessionDir("K"), "log")
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0)
	require.NoError(t, err)
	_, err = f.WriteString(`{"k":"pre","t":1,"id":"torn","tool":"Ba`)
	require.NoError(t, err)
	require.NoError(t, f.Close())

	out, err := hookProc(t, state, claudePre("K", "last", "echo done"), "run", "--agent", "claude").Output()
	require.NoError(t, err)
	require.Empty(t, out)
	recs := readLog(t, path)
	require.Greater(t, len(recs), 5, "some processes finished")
	seen := map[string]bool{}
	for _, r := range recs {
		if r.K == "pre" {
			require.False(t, seen[r.ID], "call %s checked twice", r.ID)
			require.NotEqual(t, "torn", r.ID)
			seen[r.ID] = true
		}
	}
	require.True(t, seen["last"])
	logDecisions(t, e, "K")
}

// mu guards the counters of the tests' goroutines.
var mu sync.Mutex

// TestCleanup: a new session removes the state of sessions untouched for
// longer than DefaultKeep, and keeps the others.
func TestCleanup(t *testing.T) {
	env := testEnv(t)
	invoke(t, env, claudePre("old", "1", "ls"), "--agent", "claude")
	invoke(t, env, claudePre("recent", "1", "ls"), "--agent", "claude")
	e := NewEngine(claudeAgent, cliPolicy(claudeAgent, nil), stateDir(env), nil)
	long := time.Now().Add(-DefaultKeep - time.Hour)
	require.NoError(t, os.Chtimes(filepath.Join(e.sessionDir("old"), "log"), long, long))
	require.NoError(t, os.Chtimes(e.sessionDir("old"), long, long))
	invoke(t, env, claudePre("new", "1", "ls"), "--agent", "claude")
	_, err := os.Stat(e.sessionDir("old"))
	require.True(t, os.IsNotExist(err), "the old session is removed")
	_, err = os.Stat(e.sessionDir("recent"))
	require.NoError(t, err)
}

// TestLogTooLong: a session log past maxLog lets the calls run, and says
// why in errors.log.
func TestLogTooLong(t *testing.T) {
	env := testEnv(t)
	invoke(t, env, claudePre("L", "1", "ls"), "--agent", "claude")
	e := NewEngine(claudeAgent, cliPolicy(claudeAgent, nil), stateDir(env), nil)
	require.NoError(t, os.Truncate(filepath.Join(e.sessionDir("L"), "log"), maxLog+1))
	code, out, errOut := invoke(t, env, claudePre("L", "2", "ls"), "--agent", "claude")
	require.Equal(t, 0, code)
	require.Empty(t, out)
	require.Contains(t, errOut, "too long to replay")
	b, err := os.ReadFile(filepath.Join(stateDir(env), "errors.log"))
	require.NoError(t, err)
	require.Contains(t, string(b), "too long to replay")
}
