package audit

import (
	"context"
	"encoding/json"
	"flag"
	"html"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

var screenshot = flag.String("screenshot", "", "TestHTMLInBrowser: also write a screenshot of the page to this PNG file")

// chromium returns the browser the HTML test opens, or skips (fails under
// CI=true, where .ci/run installs it).
func chromium(t *testing.T) string {
	t.Helper()
	for _, name := range []string{"chromium", "chromium-browser"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	if os.Getenv("CI") == "true" {
		t.Fatal("chromium is not installed (.ci/run installs Debian's chromium)")
	}
	t.Skip("chromium is not installed")
	return ""
}

// headless runs Chromium on a page with the flags this machine needs (no
// sandbox as root, no background traffic) and the extra arguments.
func headless(t *testing.T, browser, page string, extra ...string) []byte {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	args := append([]string{"--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
		"--disable-background-networking", "--disable-component-update", "--disable-sync",
		"--user-data-dir=" + t.TempDir(), "--window-size=1280,1600"}, extra...)
	out, err := exec.CommandContext(ctx, browser, append(args, "file://"+page)...).Output()
	require.NoError(t, err)
	return out
}

// probeScript measures, in the browser, what a reader of the report sees:
// which elements are rendered with a size, their text, their colours, and
// whether the page is wider than the window. It is added to a copy of the
// report (which itself has no script) and writes its findings into the DOM
// that --dump-dom prints.
const probeScript = `<script>
const seen = el => { const r = el.getBoundingClientRect(), s = getComputedStyle(el);
  return r.width > 0 && r.height > 0 && s.visibility !== "hidden" && s.display !== "none"; };
const all = sel => [...document.querySelectorAll(sel)];
const out = {
  titles: all(".episode .title").filter(seen).map(e => e.innerText),
  looks: all(".looks").filter(seen).map(e => e.innerText),
  loopBadge: (all(".looks-loop").filter(seen)[0] || document.body) && getComputedStyle(all(".looks-loop")[0] || document.body).backgroundColor,
  firingRows: all("tr.firing").filter(seen).map(e => e.innerText.replace(/\s+/g, " ").trim()),
  abortCells: all(".timeline .cell.v-abort").filter(seen).map(e => getComputedStyle(e).backgroundColor),
  policies: all("table.policies tr").filter(seen).map(e => e.innerText.replace(/\s+/g, " ").trim()),
  tooWide: document.documentElement.scrollWidth > window.innerWidth,
};
const pre = document.createElement("pre"); pre.id = "probe"; pre.textContent = JSON.stringify(out);
document.body.appendChild(pre);
</script>`

// TestHTMLInBrowser opens the HTML report in headless Chromium, as a user
// would, and checks what is on the screen: each session titled by what the
// user asked, its verdict, the refused calls with their previews and
// settings, red abort cells, the policies side by side, and no page wider
// than the window. -screenshot FILE keeps a picture of it.
func TestHTMLInBrowser(t *testing.T) {
	browser := chromium(t)
	st, page, errOut := main3(t, "", "--format", "html", "--compare", "quota-rule,turn-tracker",
		sessions+"/claude-code/-home-dev-shop", sessions+"/codex/2026/03/02")
	require.Equal(t, ExitOK, st, errOut)
	dir := t.TempDir()
	report := filepath.Join(dir, "report.html")
	require.NoError(t, os.WriteFile(report, []byte(page), 0o644))
	probed := filepath.Join(dir, "probed.html")
	require.NoError(t, os.WriteFile(probed, []byte(strings.Replace(page, "</body>", probeScript+"</body>", 1)), 0o644))

	dom := string(headless(t, browser, probed, "--virtual-time-budget=5000", "--dump-dom"))
	_, after, ok := strings.Cut(dom, `<pre id="probe">`)
	require.True(t, ok, "the probe did not run:\n%s", dom)
	raw, _, _ := strings.Cut(after, "</pre>")
	var got struct {
		Titles, Looks, FiringRows, AbortCells, Policies []string
		LoopBadge                                       string
		TooWide                                         bool
	}
	require.NoError(t, json.Unmarshal([]byte(html.UnescapeString(raw)), &got), raw)
	t.Logf("seen: %+v", got)

	assert.Equal(t, []string{"“the cart test fails, please fix it”", "“List the callers of Total”",
		"“Upgrade the date library and fix the parser for the new release notes”"}, got.Titles)
	assert.Equal(t, []string{"looks like a loop", "looks like a loop"}, got.Looks)
	assert.Equal(t, "rgb(247, 215, 211)", got.LoopBadge)
	require.Len(t, got.FiringRows, 4)
	assert.Equal(t, `call 5 Bash id toolu_01E, line 13 duplicate, hint {"command":"go test ./...","description":"Run the tests"} Exit code 1 --- FAIL: TestCartTotal (0.00s) cart_test.go:14: Total() = 9, want 10 FAIL FAIL example.com/shop 0.004s FAIL (nothing new) MaxRepeats (default); per tool Tools["Bash"].MaxRepeats, or .Exempt for a polling tool`, got.FiringRows[0])
	assert.Contains(t, got.FiringRows[2], "call 6 web_search id ws_0a1b2c3d4e5f…93a4b5c6d7e8f905, line 21 duplicate, abort")
	assert.Contains(t, got.FiringRows[3], "call 10 apply_patch id call_P2, line 34 duplicate, hint")
	assert.Contains(t, got.FiringRows[3], "apply_patch verification failed: Failed to find expected lines")
	assert.Equal(t, []string{"rgb(210, 58, 47)"}, got.AbortCells, "one abort, in red")
	assert.Equal(t, []string{
		"policy episodes with a firing with an abort refused calls looks like a loop looks like work",
		"default 2 1 4 2 0", "preset quota-rule 2 1 4 2 0", "preset turn-tracker 2 2 7 2 0",
	}, got.Policies)
	assert.False(t, got.TooWide, "the page is wider than a 1280-pixel window")

	if *screenshot != "" {
		abs, err := filepath.Abs(*screenshot)
		require.NoError(t, err)
		headless(t, browser, report, "--screenshot="+abs)
	}
}
