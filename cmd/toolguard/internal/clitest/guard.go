package clitest

import (
	"bytes"
	"encoding/json"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"strconv"
	"strings"
)

// Marker is in every command toolguard's install writes.
const Marker = " hook run --agent "

// snapshot is the files of a scratch environment's settings (home, XDG
// config, project), by path. The guard's state folder (XDG_STATE_HOME),
// the counter and the copied opencode packages are left out.
type snapshot map[string][]byte

func (e *Env) snapshot() snapshot {
	e.T.Helper()
	s := snapshot{}
	for _, root := range []string{e.Home, e.XDG("config"), e.Project} {
		err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			if d.IsDir() && d.Name() == "node_modules" {
				return filepath.SkipDir
			}
			if !d.Type().IsRegular() || path == e.Counter {
				return nil
			}
			b, err := os.ReadFile(path)
			if err != nil {
				return err
			}
			s[path] = b
			return nil
		})
		if err != nil {
			e.T.Fatal(err)
		}
	}
	return s
}

// diff lists the paths whose content differs between s and t, or that are
// in only one of them.
func (s snapshot) diff(t snapshot) []string {
	var out []string
	for p, b := range s {
		if c, ok := t[p]; !ok || !bytes.Equal(b, c) {
			out = append(out, p)
		}
	}
	for p := range t {
		if _, ok := s[p]; !ok {
			out = append(out, p)
		}
	}
	sort.Strings(out)
	return out
}

// Install runs `toolguard hook install --agent NAME` (in the environment's
// home, project and XDG folders) and checks it as a user would: the user's
// settings are all still there, a second install changes nothing, and
// uninstall puts every file back byte for byte. Then it installs again,
// for the run, and returns the files that install changed.
func (e *Env) Install() []string {
	e.T.Helper()
	tg := Toolguard(e.T)
	before := e.snapshot()
	e.toolguard(tg, "hook", "install", "--agent", e.Agent.Name)
	installed := e.snapshot()
	changed := before.diff(installed)
	if len(changed) == 0 {
		e.T.Fatalf("hook install changed no file")
	}
	for _, p := range changed {
		old, had := before[p]
		if !had {
			continue
		}
		if err := kept(old, installed[p]); err != "" {
			e.T.Errorf("hook install lost the user's settings in %s: %s\nbefore:\n%s\nafter:\n%s", p, err, old, installed[p])
		}
	}
	e.toolguard(tg, "hook", "install", "--agent", e.Agent.Name)
	if d := installed.diff(e.snapshot()); len(d) > 0 {
		e.T.Errorf("a second hook install changed %v", d)
	}
	e.toolguard(tg, "hook", "uninstall", "--agent", e.Agent.Name)
	if d := before.diff(e.snapshot()); len(d) > 0 {
		e.T.Errorf("hook uninstall did not restore %v", d)
	}
	e.toolguard(tg, "hook", "install", "--agent", e.Agent.Name)
	if d := installed.diff(e.snapshot()); len(d) > 0 {
		e.T.Errorf("installing again wrote something else: %v", d)
	}
	e.installed = changed
	e.original = before
	return changed
}

// Uninstall runs `toolguard hook uninstall` after the runs: the guard's
// entries are gone from every file install changed, the files install
// created are gone, and what the user had is still there.
func (e *Env) Uninstall() {
	e.T.Helper()
	e.toolguard(Toolguard(e.T), "hook", "uninstall", "--agent", e.Agent.Name)
	now := e.snapshot()
	for _, p := range e.installed {
		b, exists := now[p]
		old, had := e.original[p]
		switch {
		case !had && exists:
			e.T.Errorf("hook uninstall left %s, which install created:\n%s", p, b)
		case had && !exists:
			e.T.Errorf("hook uninstall removed %s, the user's", p)
		case had:
			if bytes.Contains(b, []byte(Marker)) {
				e.T.Errorf("hook uninstall left the guard in %s:\n%s", p, b)
			}
			if err := kept(old, b); err != "" {
				e.T.Errorf("after uninstall, %s lost the user's settings: %s", p, err)
			}
		}
	}
}

func (e *Env) toolguard(bin string, args ...string) string {
	e.T.Helper()
	out, err := e.Command(bin, args...)
	if err != nil {
		e.T.Fatalf("toolguard %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return out
}

// kept checks that what the user had (old) is all in now: a JSON object's
// members with equal values, arrays' elements among now's; any other file
// as a contiguous part of now's text. It returns what is missing, or "".
func kept(old, now []byte) string {
	var o, n any
	if json.Unmarshal(old, &o) == nil {
		if err := json.Unmarshal(now, &n); err != nil {
			return "no longer JSON: " + err.Error()
		}
		return subset("", o, n)
	}
	if !bytes.Contains(now, bytes.TrimRight(old, "\n")) {
		return "the old text is not in the new one"
	}
	return ""
}

func subset(path string, o, n any) string {
	switch ov := o.(type) {
	case map[string]any:
		nv, ok := n.(map[string]any)
		if !ok {
			return path + " is no longer an object"
		}
		for k, x := range ov {
			y, ok := nv[k]
			if !ok {
				return path + "." + k + " is gone"
			}
			if err := subset(path+"."+k, x, y); err != "" {
				return err
			}
		}
		return ""
	case []any:
		nv, ok := n.([]any)
		if !ok {
			return path + " is no longer an array"
		}
		for i, x := range ov {
			found := false
			for _, y := range nv {
				if subset("", x, y) == "" {
					found = true
					break
				}
			}
			if !found {
				b, _ := json.Marshal(x)
				return path + "[" + strconv.Itoa(i) + "] is gone: " + string(b)
			}
		}
		return ""
	}
	if !reflect.DeepEqual(o, n) {
		return path + " changed"
	}
	return ""
}
