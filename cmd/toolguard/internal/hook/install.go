package hook

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"
)

// An install writes or merges one or more files per agent (a plan). Every
// file it changes gets a backup of what it held before, and the state
// folder's installs.json (the manifest) records what was written; uninstall
// puts back the backup byte for byte when the file still holds what install
// wrote, and otherwise removes only the guard's entries, so edits made since
// are kept.

// fileChange is one file of a plan.
type fileChange struct {
	Path string
	// Data is the file's content after the change; nil removes the file.
	Data []byte
	Mode os.FileMode
	// Before is the file's content before the change; nil if absent.
	Before []byte
}

// scopeDirs are the folders a plan is made against.
type scopeDirs struct {
	home, project string
	env           *Env
}

// installer makes an agent's plan: for install (remove false) or for the
// removal of the guard's entries (remove true). Files it does not change
// are left out.
type installer func(d scopeDirs, scope, command string, remove bool) ([]fileChange, []string, error)

var installers = map[string]installer{
	"claude":   installClaude,
	"codex":    installCodex,
	"gemini":   installGemini,
	"copilot":  installCopilot,
	"opencode": installOpencode,
	"cline":    installCline,
	"crush":    installCrush,
	"cursor":   installCursor,
}

// marker is what identifies the guard's entries in an agent's settings:
// every command install writes holds it.
func marker(agentName string) string { return " hook run --agent " + agentName }

// hookCommand is the command line install writes for an agent.
func hookCommand(exe, agentName, policy string) string {
	cmd := quoteIfNeeded(exe) + marker(agentName)
	if policy != "" {
		cmd += " --policy " + quoteIfNeeded(policy)
	}
	return cmd
}

func quoteIfNeeded(s string) string {
	for _, r := range s {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("/._-+:,@%=", r)) {
			return shellQuote(s)
		}
	}
	return s
}

func installMain(args []string, env Env, remove bool) int {
	verb := "install"
	if remove {
		verb = "uninstall"
	}
	fset := flag.NewFlagSet("toolguard hook "+verb, flag.ContinueOnError)
	fset.SetOutput(io.Discard)
	name := fset.String("agent", "", "")
	scope := fset.String("scope", "user", "")
	dry := fset.Bool("dry-run", false, "")
	policyFile := ""
	if !remove {
		fset.StringVar(&policyFile, "policy", "", "")
	}
	if err := fset.Parse(args); err != nil || fset.NArg() > 0 || *name == "" {
		fmt.Fprintf(env.Stderr, "toolguard hook %s: --agent NAME is required (one of %s); flags: --scope user|project, --dry-run%s\n",
			verb, strings.Join(agentNames(), ", "), map[bool]string{false: ", --policy FILE", true: ""}[remove])
		return ExitBadInput
	}
	if *scope != "user" && *scope != "project" {
		fmt.Fprintf(env.Stderr, "toolguard hook %s: --scope is user or project, not %q\n", verb, *scope)
		return ExitBadInput
	}
	if *name == "mcphost" {
		fmt.Fprint(env.Stdout, mcphostText)
		return ExitOK
	}
	if *name == "gateway" {
		exe, _ := env.executable()
		fmt.Fprintf(env.Stdout, gatewayText, quoteIfNeeded(exe), quoteIfNeeded(exe))
		return ExitOK
	}
	inst, ok := installers[*name]
	if !ok {
		fmt.Fprintf(env.Stderr, "toolguard hook %s: unknown agent %q (one of %s)\n", verb, *name, strings.Join(agentNames(), ", "))
		return ExitBadInput
	}
	exe, err := env.executable()
	if err != nil {
		fmt.Fprintf(env.Stderr, "toolguard hook %s: finding the toolguard binary: %v\n", verb, err)
		return ExitFailed
	}
	if policyFile != "" {
		abs, err := filepath.Abs(policyFile)
		if err == nil {
			policyFile = abs
		}
		a := agents[*name]
		if _, err := hookPolicy(&env, a, policyFile); err != nil {
			fmt.Fprintf(env.Stderr, "toolguard hook install: --policy: %v\n", err)
			return ExitBadInput
		}
	}
	d, err := dirsOf(&env)
	if err != nil {
		fmt.Fprintf(env.Stderr, "toolguard hook %s: %v\n", verb, err)
		return ExitFailed
	}
	cmd := hookCommand(exe, *name, policyFile)
	var changes []fileChange
	var notes []string
	if remove {
		changes, notes, err = uninstallPlan(d, &env, *name, *scope, inst)
	} else {
		// Install over a clean slate: the guard's old entries (another
		// binary path, another policy) go first, so installing twice
		// changes nothing.
		changes, notes, err = installPlan(d, *scope, cmd, inst)
	}
	if err != nil {
		fmt.Fprintf(env.Stderr, "toolguard hook %s: %v\n", verb, err)
		return ExitFailed
	}
	if len(changes) == 0 {
		fmt.Fprintf(env.Stdout, "%s (%s scope): nothing to change.\n", *name, *scope)
	}
	for _, c := range changes {
		what := "write"
		if c.Data == nil {
			what = "remove"
		}
		if *dry {
			fmt.Fprintf(env.Stdout, "would %s %s\n", what, c.Path)
			if c.Data != nil {
				fmt.Fprintf(env.Stdout, "%s\n", indent(c.Data))
			}
			continue
		}
		if err := apply(&env, *name, *scope, c, remove); err != nil {
			fmt.Fprintf(env.Stderr, "toolguard hook %s: %v\n", verb, err)
			return ExitFailed
		}
		fmt.Fprintf(env.Stdout, "%s %s\n", map[string]string{"write": "wrote", "remove": "removed"}[what], c.Path)
	}
	for _, n := range notes {
		fmt.Fprintln(env.Stdout, n)
	}
	return ExitOK
}

func indent(b []byte) string {
	return "    " + strings.ReplaceAll(strings.TrimRight(string(b), "\n"), "\n", "\n    ")
}

func dirsOf(env *Env) (scopeDirs, error) {
	home := env.getenv("HOME")
	if home == "" {
		h, err := os.UserHomeDir()
		if err != nil {
			return scopeDirs{}, fmt.Errorf("no home folder: %w", err)
		}
		home = h
	}
	wd, err := os.Getwd()
	if err != nil {
		return scopeDirs{}, err
	}
	return scopeDirs{home: home, project: wd, env: env}, nil
}

// installPlan removes the guard's entries, then adds them anew, and keeps
// the files that really change.
func installPlan(d scopeDirs, scope, cmd string, inst installer) ([]fileChange, []string, error) {
	changes, notes, err := inst(d, scope, cmd, false)
	if err != nil {
		return nil, nil, err
	}
	var out []fileChange
	for _, c := range changes {
		if !bytes.Equal(c.Before, c.Data) || c.Before == nil {
			out = append(out, c)
		}
	}
	return out, notes, nil
}

// uninstallPlan removes the guard's entries: where the manifest says a
// file still holds what install wrote, it is put back as it was.
func uninstallPlan(d scopeDirs, env *Env, name, scope string, inst installer) ([]fileChange, []string, error) {
	changes, notes, err := inst(d, scope, "", true)
	if err != nil {
		return nil, nil, err
	}
	man := readManifest(env)
	var out []fileChange
	for _, c := range changes {
		if m, ok := man.find(name, scope, c.Path); ok && c.Before != nil && hashOf(c.Before) == m.Written {
			if m.Created {
				c.Data = nil
			} else if b, err := os.ReadFile(m.Backup); err == nil {
				c.Data = b
			}
		}
		if !bytes.Equal(c.Before, c.Data) || (c.Data == nil) != (c.Before == nil) {
			out = append(out, c)
		}
	}
	return out, notes, nil
}

// apply writes one change, with a backup and a manifest entry.
func apply(env *Env, name, scope string, c fileChange, remove bool) error {
	man := readManifest(env)
	if !remove && c.Before != nil {
		// Back up what the user had, once: a second install keeps the
		// first backup, which is the user's own file.
		if m, ok := man.find(name, scope, c.Path); !ok || m.Backup == "" {
			bk := c.Path + ".toolguard-backup"
			if err := os.WriteFile(bk, c.Before, 0o600); err != nil {
				return fmt.Errorf("backing up %s: %w", c.Path, err)
			}
			man.set(manifestEntry{Agent: name, Scope: scope, Path: c.Path, Backup: bk})
		}
	}
	if c.Data == nil {
		if err := os.Remove(c.Path); err != nil && !errors.Is(err, os.ErrNotExist) {
			return err
		}
	} else {
		if err := os.MkdirAll(filepath.Dir(c.Path), 0o755); err != nil {
			return err
		}
		mode := c.Mode
		if mode == 0 {
			mode = 0o644
			if st, err := os.Stat(c.Path); err == nil {
				mode = st.Mode().Perm()
			}
		}
		tmp := c.Path + ".toolguard-tmp"
		if err := os.WriteFile(tmp, c.Data, mode); err != nil {
			return err
		}
		if err := os.Chmod(tmp, mode); err != nil {
			return err
		}
		if err := os.Rename(tmp, c.Path); err != nil {
			return err
		}
	}
	if remove {
		if m, ok := man.find(name, scope, c.Path); ok {
			if m.Backup != "" {
				_ = os.Remove(m.Backup)
			}
			man.drop(name, scope, c.Path)
		}
	} else {
		m, ok := man.find(name, scope, c.Path)
		if !ok {
			m = manifestEntry{Agent: name, Scope: scope, Path: c.Path, Created: c.Before == nil}
		}
		m.Written = hashOf(c.Data)
		man.set(m)
	}
	return man.write(env)
}

func hashOf(b []byte) string {
	h := sha256.Sum256(b)
	return hex.EncodeToString(h[:])
}

// manifestEntry is one file install changed.
type manifestEntry struct {
	Agent   string `json:"agent"`
	Scope   string `json:"scope"`
	Path    string `json:"path"`
	Created bool   `json:"created,omitempty"` // the file did not exist before
	Backup  string `json:"backup,omitempty"`  // what it held before
	Written string `json:"written"`           // sha256 of what install wrote
}

type manifest struct{ Entries []manifestEntry }

func manifestPath(env *Env) string { return filepath.Join(stateDir(env), "installs.json") }

func readManifest(env *Env) *manifest {
	m := &manifest{}
	if b, err := os.ReadFile(manifestPath(env)); err == nil {
		_ = json.Unmarshal(b, &m.Entries)
	}
	return m
}

func (m *manifest) find(agent, scope, path string) (manifestEntry, bool) {
	for _, e := range m.Entries {
		if e.Agent == agent && e.Scope == scope && e.Path == path {
			return e, true
		}
	}
	return manifestEntry{}, false
}

func (m *manifest) set(e manifestEntry) {
	for i, x := range m.Entries {
		if x.Agent == e.Agent && x.Scope == e.Scope && x.Path == e.Path {
			m.Entries[i] = e
			return
		}
	}
	m.Entries = append(m.Entries, e)
}

func (m *manifest) drop(agent, scope, path string) {
	out := m.Entries[:0]
	for _, e := range m.Entries {
		if !(e.Agent == agent && e.Scope == scope && e.Path == path) {
			out = append(out, e)
		}
	}
	m.Entries = out
}

func (m *manifest) write(env *Env) error {
	if err := os.MkdirAll(stateDir(env), 0o700); err != nil {
		return err
	}
	sort.Slice(m.Entries, func(i, j int) bool { return m.Entries[i].Path < m.Entries[j].Path })
	b, err := json.MarshalIndent(m.Entries, "", "  ")
	if err != nil {
		return err
	}
	tmp := manifestPath(env) + ".tmp"
	if err := os.WriteFile(tmp, append(b, '\n'), 0o600); err != nil {
		return err
	}
	return os.Rename(tmp, manifestPath(env))
}

// readFile returns a file's content, nil if it does not exist.
func readFile(path string) ([]byte, error) {
	b, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	if b == nil {
		b = []byte{}
	}
	return b, nil
}

// jsonSettings reads a JSON settings file as an object (empty if absent).
func jsonSettings(path string) (map[string]any, []byte, error) {
	before, err := readFile(path)
	if err != nil {
		return nil, nil, err
	}
	m := map[string]any{}
	if len(bytes.TrimSpace(before)) > 0 {
		dec := json.NewDecoder(bytes.NewReader(before))
		dec.UseNumber()
		if err := dec.Decode(&m); err != nil {
			return nil, nil, fmt.Errorf("%s is not a JSON object (fix or move it first): %w", path, err)
		}
		if m == nil {
			m = map[string]any{}
		}
	}
	return m, before, nil
}

func encodeSettings(m map[string]any) []byte {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	_ = enc.Encode(m)
	return buf.Bytes()
}

// ours reports whether a hook handler (an object with a command, or bash)
// is the guard's.
func ours(h any, mark string) bool {
	o, ok := h.(map[string]any)
	if !ok {
		return false
	}
	for _, k := range []string{"command", "bash"} {
		if s, ok := o[k].(string); ok && strings.Contains(s, mark) {
			return true
		}
	}
	return false
}

// editEvents edits the events object obj[key] (such as "hooks"): for each
// event, drop the guard's entries, then (when add is set) append add's.
// nested says the event lists hold groups with a "hooks" list of handlers
// (Claude Code's shape) rather than handlers.
func editEvents(obj map[string]any, key, mark string, nested bool, add map[string]any) {
	events, _ := obj[key].(map[string]any)
	if events == nil {
		if len(add) == 0 {
			return
		}
		events = map[string]any{}
	}
	for ev, list := range events {
		arr, ok := list.([]any)
		if !ok {
			continue
		}
		var keep []any
		for _, item := range arr {
			if !nested {
				if !ours(item, mark) {
					keep = append(keep, item)
				}
				continue
			}
			g, ok := item.(map[string]any)
			hs, ok2 := g["hooks"].([]any)
			if !ok || !ok2 {
				keep = append(keep, item)
				continue
			}
			var kh []any
			for _, h := range hs {
				if !ours(h, mark) {
					kh = append(kh, h)
				}
			}
			if len(kh) == len(hs) {
				keep = append(keep, item)
			} else if len(kh) > 0 {
				g2 := map[string]any{}
				for k, v := range g {
					g2[k] = v
				}
				g2["hooks"] = kh
				keep = append(keep, g2)
			}
		}
		if len(keep) == 0 {
			delete(events, ev)
		} else {
			events[ev] = keep
		}
	}
	names := make([]string, 0, len(add))
	for ev := range add {
		names = append(names, ev)
	}
	sort.Strings(names)
	for _, ev := range names {
		arr, _ := events[ev].([]any)
		events[ev] = append(arr, add[ev])
	}
	if len(events) == 0 {
		delete(obj, key)
	} else {
		obj[key] = events
	}
}

// mergeJSON is the plan for one JSON settings file edited by editEvents.
func mergeJSON(path, key, mark string, nested bool, add map[string]any) ([]fileChange, error) {
	m, before, err := jsonSettings(path)
	if err != nil {
		return nil, err
	}
	editEvents(m, key, mark, nested, add)
	return []fileChange{{Path: path, Data: encodeSettings(m), Before: before}}, nil
}

func pick(scope, user, project string) string {
	if scope == "project" {
		return project
	}
	return user
}

func envOr(d scopeDirs, key, def string) string {
	if v := d.env.getenv(key); v != "" && filepath.IsAbs(v) {
		return v
	}
	return def
}

// group is one Claude-style matcher group holding one handler.
func group(matcher string, handler map[string]any) map[string]any {
	g := map[string]any{"hooks": []any{handler}}
	if matcher != "" {
		g["matcher"] = matcher
	}
	return g
}

func installClaude(d scopeDirs, scope, cmd string, remove bool) ([]fileChange, []string, error) {
	path := pick(scope, filepath.Join(d.home, ".claude", "settings.json"), filepath.Join(d.project, ".claude", "settings.json"))
	var add map[string]any
	if !remove {
		h := map[string]any{"type": "command", "command": cmd, "timeout": 30}
		add = map[string]any{
			"PreToolUse":         group("*", h),
			"PostToolUse":        group("*", h),
			"PostToolUseFailure": group("*", h),
			"UserPromptSubmit":   group("", h),
		}
	}
	ch, err := mergeJSON(path, "hooks", marker("claude"), true, add)
	return ch, nil, err
}

func installGemini(d scopeDirs, scope, cmd string, remove bool) ([]fileChange, []string, error) {
	path := pick(scope, filepath.Join(d.home, ".gemini", "settings.json"), filepath.Join(d.project, ".gemini", "settings.json"))
	var add map[string]any
	if !remove {
		h := func(ev string) map[string]any {
			return map[string]any{"name": "toolguard", "type": "command", "command": cmd + " --event " + ev, "timeout": 30000}
		}
		add = map[string]any{
			"BeforeTool":          group("*", h("BeforeTool")),
			"AfterTool":           group("*", h("AfterTool")),
			"BeforeAgent":         group("", h("BeforeAgent")),
			"BeforeToolSelection": group("", h("BeforeToolSelection")),
		}
	}
	ch, err := mergeJSON(path, "hooks", marker("gemini"), true, add)
	var notes []string
	if !remove {
		notes = append(notes, "Gemini CLI runs no hooks at all in a folder you have not trusted: trust each project folder "+
			"(answer its trust prompt, or add it to ~/.gemini/trustedFolders.json as \"TRUST_FOLDER\"). "+
			"toolguard does not trust folders for you.")
	}
	return ch, notes, err
}

func installCrush(d scopeDirs, scope, cmd string, remove bool) ([]fileChange, []string, error) {
	cfg := envOr(d, "XDG_CONFIG_HOME", filepath.Join(d.home, ".config"))
	path := pick(scope, filepath.Join(cfg, "crush", "crush.json"), filepath.Join(d.project, "crush.json"))
	var add map[string]any
	if !remove {
		add = map[string]any{"PreToolUse": map[string]any{"matcher": ".*", "command": cmd, "timeout": 30}}
	}
	ch, err := mergeJSON(path, "hooks", marker("crush"), false, add)
	var notes []string
	if !remove {
		notes = append(notes, "Crush has only a PreToolUse hook: the guard cannot see results there, so a repeat whose result changed (a poll) still counts as a repeat.")
	}
	return ch, notes, err
}

func installCursor(d scopeDirs, scope, cmd string, remove bool) ([]fileChange, []string, error) {
	path := pick(scope, filepath.Join(d.home, ".cursor", "hooks.json"), filepath.Join(d.project, ".cursor", "hooks.json"))
	m, before, err := jsonSettings(path)
	if err != nil {
		return nil, nil, err
	}
	var add map[string]any
	if !remove {
		add = map[string]any{}
		for _, ev := range []string{"preToolUse", "postToolUse", "beforeShellExecution", "afterShellExecution", "beforeMCPExecution", "afterMCPExecution", "beforeSubmitPrompt"} {
			add[ev] = map[string]any{"command": cmd + " --event " + ev}
		}
		if _, ok := m["version"]; !ok {
			m["version"] = 1
		}
	}
	editEvents(m, "hooks", marker("cursor"), false, add)
	if remove && len(m) == 1 && m["version"] != nil {
		if _, had := m["hooks"]; !had {
			delete(m, "version")
		}
	}
	return []fileChange{{Path: path, Data: encodeSettings(m), Before: before}}, nil, nil
}

func installCopilot(d scopeDirs, scope, cmd string, remove bool) ([]fileChange, []string, error) {
	home := envOr(d, "COPILOT_HOME", filepath.Join(d.home, ".copilot"))
	path := pick(scope, filepath.Join(home, "hooks", "toolguard.json"), filepath.Join(d.project, ".github", "hooks", "toolguard.json"))
	before, err := readFile(path)
	if err != nil {
		return nil, nil, err
	}
	if remove {
		if before == nil {
			return nil, nil, nil
		}
		return []fileChange{{Path: path, Data: nil, Before: before}}, nil, nil
	}
	hooks := map[string]any{}
	for _, ev := range []string{"preToolUse", "postToolUse", "userPromptSubmitted", "permissionRequest"} {
		hooks[ev] = []any{map[string]any{"type": "command", "bash": cmd + " --event " + ev, "timeoutSec": 30}}
	}
	data := encodeSettings(map[string]any{"version": 1, "hooks": hooks})
	var notes []string
	if scope == "project" {
		notes = append(notes, "Copilot CLI runs project hooks only in a trusted folder (trustedFolders in its config.json).")
	}
	return []fileChange{{Path: path, Data: data, Before: before}}, notes, nil
}

func installCline(d scopeDirs, scope, cmd string, remove bool) ([]fileChange, []string, error) {
	dir := pick(scope, filepath.Join(envOr(d, "CLINE_DIR", filepath.Join(d.home, ".cline")), "hooks"), filepath.Join(d.project, ".clinerules", "hooks"))
	var out []fileChange
	for _, ev := range []string{"PreToolUse", "PostToolUse", "UserPromptSubmit"} {
		path := filepath.Join(dir, ev)
		before, err := readFile(path)
		if err != nil {
			return nil, nil, err
		}
		isOurs := before != nil && bytes.Contains(before, []byte(marker("cline")))
		if remove {
			if isOurs {
				out = append(out, fileChange{Path: path, Data: nil, Before: before})
			}
			continue
		}
		if before != nil && !isOurs {
			return nil, nil, fmt.Errorf("%s is a hook of yours: Cline runs one executable per event, so toolguard will not replace it; "+
				"call `%s --event %s` from it (it reads the payload on standard input and prints Cline's answer)", path, cmd, ev)
		}
		script := "#!/bin/sh\n# Written by `toolguard hook install --agent cline`; removed by `toolguard hook uninstall --agent cline`.\nexec " +
			cmd + " --event " + ev + "\n"
		out = append(out, fileChange{Path: path, Data: []byte(script), Mode: 0o755, Before: before})
	}
	return out, nil, nil
}

// opencodePlugin is the plugin install writes: it runs the guard for each
// tool call and new user message, and does what it answers.
const opencodePlugin = `// Written by ` + "`toolguard hook install --agent opencode`" + `; removed by
// ` + "`toolguard hook uninstall --agent opencode`" + `. It runs toolguard for each
// tool call: a refused call throws (the model reads why), a stop aborts the
// session. A failure of the guard lets the call run. With
// TOOLGUARD_SERVE_URL set (http://127.0.0.1:7878), it posts to
// ` + "`toolguard serve`" + ` instead of starting a process per event.
import { spawnSync } from "node:child_process"

const COMMAND = %s
const SERVE = process.env.TOOLGUARD_SERVE_URL

async function guard(event, input, output) {
  const body = JSON.stringify({ event, input, output })
  try {
    if (SERVE) {
      const r = await fetch(SERVE + "/hook/opencode?event=" + encodeURIComponent(event), {
        method: "POST", body, headers: { "content-type": "application/json" },
      })
      const text = await r.text()
      return text ? JSON.parse(text) : { action: "allow" }
    }
    const r = spawnSync("/bin/sh", ["-c", COMMAND + " --event " + event], {
      input: body,
      encoding: "utf8",
      timeout: 30000,
    })
    if (r.status !== 0 || !r.stdout) return { action: "allow" }
    return JSON.parse(r.stdout)
  } catch (e) {
    return { action: "allow" }
  }
}

export const Toolguard = async (ctx) => ({
  "chat.message": async (input, output) => {
    await guard("chat.message", { sessionID: input.sessionID }, {})
  },
  "tool.execute.before": async (input, output) => {
    const a = await guard("tool.execute.before", input, { args: output.args })
    if (a.action === "abort") {
      try { await ctx.client.session.abort({ path: { id: input.sessionID } }) } catch (e) {}
      throw new Error(a.message)
    }
    if (a.action === "deny") throw new Error(a.message)
  },
  "tool.execute.after": async (input, output) => {
    await guard("tool.execute.after", input, { output: output.output, metadata: output.metadata })
  },
})
`

func installOpencode(d scopeDirs, scope, cmd string, remove bool) ([]fileChange, []string, error) {
	cfg := envOr(d, "XDG_CONFIG_HOME", filepath.Join(d.home, ".config"))
	path := pick(scope, filepath.Join(cfg, "opencode", "plugin", "toolguard.js"), filepath.Join(d.project, ".opencode", "plugin", "toolguard.js"))
	before, err := readFile(path)
	if err != nil {
		return nil, nil, err
	}
	if remove {
		if before == nil || !bytes.Contains(before, []byte(marker("opencode"))) {
			return nil, nil, nil
		}
		return []fileChange{{Path: path, Data: nil, Before: before}}, nil, nil
	}
	if before != nil && !bytes.Contains(before, []byte(marker("opencode"))) {
		return nil, nil, fmt.Errorf("%s exists and is not toolguard's plugin", path)
	}
	lit, _ := json.Marshal(cmd)
	data := []byte(fmt.Sprintf(opencodePlugin, lit))
	notes := []string{"opencode installs its plugin package into each config folder without node_modules before it loads plugins (about 2 minutes, once)."}
	return []fileChange{{Path: path, Data: data, Before: before}}, notes, nil
}

// mcphostText is what `hook install --agent mcphost` prints.
const mcphostText = `mcphost cannot be guarded by a hook: its PreToolUse "block" changes only
what the terminal shows, and the tool runs anyway. Guard its stdio MCP servers
with toolguard mcp-proxy instead: in ~/.mcphost.yml, put the proxy in front of
each server's command, for example

  mcpServers:
    files:
      command: toolguard
      args: ["mcp-proxy", "--", "npx", "-y", "@modelcontextprotocol/server-filesystem", "/work"]

A repeated call is then answered by the proxy with the hint and never reaches
the server. mcphost's built-in (in-process) servers cannot be guarded either
way. See docs/hooks.md.
`

// codexEvents are the Codex hook events the guard uses, with the names its
// trust keys spell them.
var codexEvents = []struct{ name, key string }{
	{"PreToolUse", "pre_tool_use"},
	{"PostToolUse", "post_tool_use"},
	{"UserPromptSubmit", "user_prompt_submit"},
}

const (
	codexBegin = "# toolguard hook install: begin (removed by `toolguard hook uninstall --agent codex`)\n"
	codexEnd   = "# toolguard hook install: end\n"
)

// installCodex writes $CODEX_HOME/hooks.json and, since Codex silently
// skips a hook its config does not trust, the trust entries in
// $CODEX_HOME/config.toml: one [hooks.state."FILE:EVENT:GROUP:HANDLER"]
// table per handler with the sha256 of the handler's group in Codex's
// canonical form (see codexTrustHash).
func installCodex(d scopeDirs, scope, cmd string, remove bool) ([]fileChange, []string, error) {
	if scope == "project" {
		return nil, nil, errors.New("codex: its hooks are trusted only through $CODEX_HOME/config.toml: use --scope user")
	}
	home := envOr(d, "CODEX_HOME", filepath.Join(d.home, ".codex"))
	hooksPath := filepath.Join(home, "hooks.json")
	m, before, err := jsonSettings(hooksPath)
	if err != nil {
		return nil, nil, err
	}
	editEvents(m, "hooks", marker("codex"), true, nil)
	var trust strings.Builder
	if !remove {
		events, _ := m["hooks"].(map[string]any)
		if events == nil {
			events = map[string]any{}
			m["hooks"] = events
		}
		for _, ev := range codexEvents {
			h := map[string]any{"type": "command", "command": cmd, "timeout": 30}
			arr, _ := events[ev.name].([]any)
			fmt.Fprintf(&trust, "[hooks.state.%s]\ntrusted_hash = %q\n",
				tomlQuote(fmt.Sprintf("%s:%s:%d:0", hooksPath, ev.key, len(arr))), codexTrustHash(ev.key, "", cmd, 30))
			events[ev.name] = append(arr, group("", h))
		}
	}
	out := []fileChange{{Path: hooksPath, Data: encodeSettings(m), Before: before}}
	cfgPath := filepath.Join(home, "config.toml")
	cfgBefore, err := readFile(cfgPath)
	if err != nil {
		return nil, nil, err
	}
	cfg := removeBlock(string(cfgBefore))
	if !remove {
		if cfg != "" && !strings.HasSuffix(cfg, "\n") {
			cfg += "\n"
		}
		cfg += codexBegin + trust.String() + codexEnd
	}
	if cfgBefore != nil || cfg != "" {
		out = append(out, fileChange{Path: cfgPath, Data: []byte(cfg), Before: cfgBefore})
	}
	return out, nil, nil
}

// removeBlock removes the guard's block from a config.toml.
func removeBlock(s string) string {
	i := strings.Index(s, codexBegin)
	if i < 0 {
		return s
	}
	j := strings.Index(s[i:], codexEnd)
	if j < 0 {
		return s
	}
	return s[:i] + s[i+j+len(codexEnd):]
}

// tomlQuote quotes s as a TOML basic string.
func tomlQuote(s string) string {
	var b strings.Builder
	b.WriteByte('"')
	for _, r := range s {
		switch {
		case r == '"' || r == '\\':
			b.WriteByte('\\')
			b.WriteRune(r)
		case r < 0x20 || r == 0x7f:
			fmt.Fprintf(&b, "\\u%04X", r)
		default:
			b.WriteRune(r)
		}
	}
	b.WriteByte('"')
	return b.String()
}

// codexTrustHash is the hash Codex keeps for a trusted hook group: sha256
// of the compact, key-sorted JSON of {"event_name", "matcher" (only when
// set), "hooks": [{"type", "command", "timeout", "async"}]}.
func codexTrustHash(event, matcher, cmd string, timeout int) string {
	v := map[string]any{
		"event_name": event,
		"hooks":      []any{map[string]any{"type": "command", "command": cmd, "timeout": timeout, "async": false}},
	}
	if matcher != "" {
		v["matcher"] = matcher
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(v)
	h := sha256.Sum256(bytes.TrimSuffix(buf.Bytes(), []byte("\n")))
	return "sha256:" + hex.EncodeToString(h[:])
}

// gatewayText is what `hook install --agent gateway` prints: Docker MCP
// Gateway takes its interceptors on its command line, not from a file.
const gatewayText = `Docker MCP Gateway takes interceptors on its command line. With toolguard serve
running (%s serve), start the gateway with

  docker mcp gateway run \
    --interceptor 'before:http:http://127.0.0.1:7878/hook/gateway?event=before' \
    --interceptor 'after:http:http://127.0.0.1:7878/hook/gateway?event=after'

or, without a server, one process per call:

  docker mcp gateway run \
    --interceptor 'before:exec:%s hook run --agent gateway --event before' \
    --interceptor 'after:exec:... the same with --event after'

A repeated call is answered with the hint as an error result and never reaches
its server. See docs/hooks.md.
`
