package hook

import (
	"bufio"
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/toolguard/toolguard"
)

// statusMain is "hook status": for each agent and scope, whether the
// guard is installed and where; then the sessions kept.
func statusMain(args []string, env Env) int {
	if len(args) > 0 {
		fmt.Fprintln(env.Stderr, "toolguard hook status takes no arguments")
		return ExitBadInput
	}
	d, err := dirsOf(&env)
	if err != nil {
		fmt.Fprintf(env.Stderr, "toolguard hook status: %v\n", err)
		return ExitFailed
	}
	names := make([]string, 0, len(installers))
	for n := range installers {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		for _, scope := range []string{"user", "project"} {
			// The removal plan lists exactly the files that hold the
			// guard's entries.
			ch, _, err := installers[n](d, scope, "", true)
			if err != nil {
				continue
			}
			for _, c := range ch {
				if c.Before != nil && bytes.Contains(c.Before, []byte(marker(n))) {
					fmt.Fprintf(env.Stdout, "%-9s %-7s installed  %s\n", n, scope, c.Path)
				}
			}
		}
	}
	fmt.Fprintf(env.Stdout, "state: %s\n", stateDir(&env))
	ents, _ := os.ReadDir(filepath.Join(stateDir(&env), "sessions"))
	fmt.Fprintf(env.Stdout, "sessions kept: %d (untouched ones are removed after %s)\n", len(ents), DefaultKeep)
	if v := env.getenv("TOOLGUARD_HOOK"); v != "" {
		fmt.Fprintf(env.Stdout, "TOOLGUARD_HOOK=%s\n", v)
	}
	return ExitOK
}

// logMain is "hook log SESSION": each checked call of the session, its
// decision and, for a refusal, why.
func logMain(args []string, env Env) int {
	fset := flag.NewFlagSet("toolguard hook log", flag.ContinueOnError)
	fset.SetOutput(io.Discard)
	all := fset.Bool("all", false, "")
	if err := fset.Parse(args); err != nil || fset.NArg() != 1 {
		fmt.Fprintln(env.Stderr, "usage: toolguard hook log [--all] SESSION (a session id, or a prefix of one; --all lists allowed calls too)")
		return ExitBadInput
	}
	id := fset.Arg(0)
	root := filepath.Join(stateDir(&env), "sessions")
	ents, _ := os.ReadDir(root)
	var found []string
	for _, de := range ents {
		n := de.Name()
		if i := strings.IndexByte(n, '-'); i > 0 && (strings.HasPrefix(n[i+1:], id) || n[i+1:] == (&Engine{}).sessionKey(id)) {
			found = append(found, n)
		}
	}
	if len(found) == 0 {
		fmt.Fprintf(env.Stderr, "toolguard hook log: no session %q under %s\n", id, root)
		return ExitFailed
	}
	for _, n := range found {
		if err := printLog(env.Stdout, filepath.Join(root, n, "log"), n, *all); err != nil {
			fmt.Fprintf(env.Stderr, "toolguard hook log: %v\n", err)
			return ExitFailed
		}
	}
	return ExitOK
}

func printLog(w io.Writer, path, name string, all bool) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	fmt.Fprintf(w, "session %s\n", name)
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<16), 1<<26)
	turn, seq, refused := 1, 0, 0
	for sc.Scan() {
		var r record
		if json.Unmarshal(sc.Bytes(), &r) != nil {
			continue
		}
		switch r.K {
		case "reset":
			turn++
			fmt.Fprintf(w, "-- turn %d\n", turn)
		case "pre":
			seq++
			if r.V == toolguard.Allow && !all {
				continue
			}
			at := time.Unix(0, r.T).UTC().Format("15:04:05")
			fmt.Fprintf(w, "%s call %d %s: %s", at, seq, r.Tool, r.V)
			if r.V != toolguard.Allow {
				refused++
				fmt.Fprintf(w, " (%s)\n    %s", r.Why, strings.ReplaceAll(r.Msg, "\n", "\n    "))
			}
			fmt.Fprintln(w)
		}
	}
	fmt.Fprintf(w, "%d calls checked, %d refused\n", seq, refused)
	return sc.Err()
}
