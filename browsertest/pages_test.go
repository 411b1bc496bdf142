package browsertest_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/accessibility"
	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/actionreg/actions"
	"github.com/actionreg/actions/identity"
	"github.com/actionreg/actions/internal/pagestest"
	"github.com/actionreg/actions/pages"
	"github.com/actionreg/actions/sqlstore"
	"github.com/actionreg/actions/store"
)

// The browser tests drive Debian's chromium, headless, through chromedp.
// Without a Chromium on the machine they skip, saying so; .ci/run
// installs it, so in CI they always run.

// chromium finds the browser: $CHROME, then the usual names.
func chromium() string {
	if p := os.Getenv("CHROME"); p != "" {
		return p
	}
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome", "google-chrome-stable"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	return ""
}

// tab is one browser tab and what its console said.
type tab struct {
	t   *testing.T
	ctx context.Context
	srv string

	mu      sync.Mutex
	console []string
}

// newTab starts a headless Chromium of its own (a fresh profile, no
// network but the test server's loopback) and opens a tab.
func newTab(t *testing.T, f *pagestest.Fixture) *tab {
	t.Helper()
	path := chromium()
	if path == "" {
		t.Skip("browser test skipped: no Chromium found (install Debian's chromium: apt-get install chromium, or set CHROME)")
	}
	opts := []chromedp.ExecAllocatorOption{
		chromedp.ExecPath(path), chromedp.Headless, chromedp.NoSandbox, chromedp.DisableGPU,
		chromedp.NoFirstRun, chromedp.NoDefaultBrowserCheck, chromedp.UserDataDir(t.TempDir()),
		chromedp.Flag("disable-quic", true), chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true), chromedp.Flag("disable-sync", true),
		chromedp.Flag("disable-extensions", true), chromedp.Flag("font-render-hinting", "none"),
		chromedp.WindowSize(1200, 900),
	}
	actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancelTab := chromedp.NewContext(actx)
	ctx, cancelTime := context.WithTimeout(ctx, 2*time.Minute)
	tb := &tab{t: t, ctx: ctx, srv: f.Srv.URL}
	t.Cleanup(func() { cancelTime(); cancelTab(); cancelAlloc() })
	require.NoError(t, chromedp.Do(ctx, chromedp.Navigate("about:blank")), "start Chromium")
	messages := chromedp.Console(ctx)
	go func() {
		for m, err := range messages {
			if err != nil {
				return
			}
			if m.Type == "error" || m.Type == "exception" || m.Type == "assert" {
				tb.mu.Lock()
				tb.console = append(tb.console, fmt.Sprintf("%s %s (%s)", m.Type, m.Text, m.URL))
				tb.mu.Unlock()
			}
		}
	}()
	return tb
}

// do runs steps, failing the test on an error.
func (tb *tab) do(steps ...chromedp.Action[chromedp.Void]) {
	tb.t.Helper()
	require.NoError(tb.t, chromedp.Do(tb.ctx, steps...))
}

func (tb *tab) open(path string) {
	tb.t.Helper()
	tb.do(chromedp.Navigate(tb.srv+path), chromedp.WaitReady(chromedp.CSS("body")))
}

func (tb *tab) text(sel string) string {
	tb.t.Helper()
	s, err := chromedp.Run(tb.ctx, chromedp.Text(chromedp.CSS(sel)))
	require.NoError(tb.t, err, sel)
	return s
}

func eval[T any](tb *tab, js string) T {
	tb.t.Helper()
	v, err := chromedp.Run(tb.ctx, chromedp.Evaluate[T](js))
	require.NoError(tb.t, err, js)
	return v
}

// click clicks the element and waits for the page it leads to.
func (tb *tab) click(sel string) {
	tb.t.Helper()
	tb.do(chromedp.Click(chromedp.CSS(sel), chromedp.NodeVisible))
	tb.settle()
}

// settle waits for the navigation a click or a key started.
func (tb *tab) settle() {
	tb.t.Helper()
	tb.do(chromedp.Sleep(150*time.Millisecond), chromedp.WaitReady(chromedp.CSS("body")))
	for range 1200 { // 50 ms each: up to a minute, on a loaded machine
		if eval[string](tb, `document.readyState`) == "complete" {
			return
		}
		tb.do(chromedp.Sleep(50 * time.Millisecond))
	}
}

// quiet checks that the console said nothing wrong, and clears it.
func (tb *tab) quiet(what string) {
	tb.t.Helper()
	tb.do(chromedp.Sleep(100 * time.Millisecond))
	tb.mu.Lock()
	defer tb.mu.Unlock()
	assert.Empty(tb.t, tb.console, "console errors on %s", what)
	tb.console = nil
}

// forget clears the console (after a page answered an expected error).
func (tb *tab) forget() {
	tb.do(chromedp.Sleep(100 * time.Millisecond))
	tb.mu.Lock()
	tb.console = nil
	tb.mu.Unlock()
}

// shot writes a screenshot of the page to browsertest/.artifacts/NAME.png (not
// committed), and to docs/pages/NAME.png when PAGES_DOCS is set.
func (tb *tab) shot(name string) {
	tb.t.Helper()
	png, err := chromedp.Run(tb.ctx, chromedp.FullScreenshot(100))
	require.NoError(tb.t, err)
	dir := ".artifacts"
	require.NoError(tb.t, os.MkdirAll(dir, 0o755))
	require.NoError(tb.t, os.WriteFile(filepath.Join(dir, name+".png"), png, 0o644))
	if os.Getenv("PAGES_DOCS") != "" {
		require.NoError(tb.t, os.WriteFile(filepath.Join("..", "docs", "pages", name+".png"), png, 0o644))
	}
}

// interactive are the roles a person operates; each needs a name.
var interactive = []string{"button", "link", "textbox", "combobox", "checkbox", "radio", "searchbox", "listbox", "menuitem", "tab", "region"}

// axNames returns the accessible names of the page's controls by role,
// from the browser's accessibility tree, and fails on a control without
// a name.
func (tb *tab) axNames(what string) map[string][]string {
	tb.t.Helper()
	res, err := chromedp.Call(tb.ctx, accessibility.GetFullAXTree, accessibility.GetFullAXTreeParams{})
	require.NoError(tb.t, err)
	out := map[string][]string{}
	for _, n := range res.Nodes {
		if n.Ignored || n.Role == nil {
			continue
		}
		role := axString(n.Role)
		name := ""
		if n.Name != nil {
			name = strings.TrimSpace(axString(n.Name))
		}
		if slices.Contains(interactive, role) {
			assert.NotEmpty(tb.t, name, "%s: a %s without an accessible name", what, role)
		}
		if name != "" {
			out[role] = append(out[role], name)
		}
	}
	return out
}

func axString(v *accessibility.Value) string {
	var s string
	_ = json.Unmarshal(v.Value, &s)
	return s
}

// tabTo presses Tab until the focused element's text is label, then
// returns; it fails after 40 presses.
func (tb *tab) tabTo(label string) {
	tb.t.Helper()
	for range 40 {
		tb.do(chromedp.KeyEvent(kb.Tab))
		if strings.TrimSpace(eval[string](tb, `document.activeElement ? document.activeElement.textContent : ""`)) == label {
			return
		}
	}
	tb.t.Fatalf("Tab never reached %q", label)
}

// heldParams is the change of the browser tests: every kind of value, a
// 10 KB text, and a right-to-left override in a label.
func heldParams() (map[string]any, string) {
	var b strings.Builder
	for i := 0; b.Len() < 10240; i++ {
		fmt.Fprintf(&b, "line %04d: the crates were water-damaged in transit and cannot be sold.\n", i)
	}
	long := b.String()
	return map[string]any{
		"item":    "apples",
		"count":   42,
		"note":    long,
		"labels":  map[string]any{"display": "invoice\u202Efdp.exe", "lang": "en"},
		"batches": []any{map[string]any{"lot": "A-1", "count": 30}, map[string]any{"lot": "A-2", "count": 12}},
	}, long
}

// TestBrowserConfirm: the editor opens the screen, sees every argument
// (the 10 KB text whole, the U+202E as an escape, flagged), confirms with
// the keyboard, sees the done page, the change gone from the list and the
// confirmed call in the run log, with its record.
func TestBrowserConfirm(t *testing.T) {
	pagestest.EachEngine(t, nil, func(t *testing.T, f *pagestest.Fixture) {
		params, long := heldParams()
		id := f.Hold("editor", params)
		f.Clock.Add(3 * time.Minute)
		tb := newTab(t, f)

		tb.open("/login/editor")
		assert.Contains(t, tb.text("main"), "Discard stock")
		tb.shot("pending")
		names := tb.axNames("the list")
		assert.Contains(t, names["link"], "Discard stock")
		tb.quiet("the list")

		tb.click(`a.change-link`)
		assert.Equal(t, "/ui/changes/"+id, eval[string](tb, `location.pathname`))
		main := tb.text("main")
		for _, want := range []string{"Discard stock", "Removes items from the stock for good", "editor", "Deletes data", "destructive",
			"apples", "42", "A-1", "A-2", "30", "12", "lang", "en", "⟨U+202E⟩", "/labels/display", "right-to-left override"} {
			assert.Contains(t, main, want)
		}
		assert.Contains(t, main, "Expires", "expiry shown")
		assert.Contains(t, tb.text("dl.facts"), "in 6 days")
		got := eval[string](tb, `document.querySelector('.long').textContent`)
		assert.Equal(t, long, got, "the 10 KB text, whole")
		assert.False(t, eval[bool](tb, `document.body.innerText.includes("\u202e")`), "no raw U+202E on the page")
		assert.Equal(t, "invoice⟨U+202E⟩ (right-to-left override)fdp.exe", eval[string](tb, `document.querySelector('.value mark.esc').parentElement.textContent`))
		overflow := eval[bool](tb, `(() => { const e = document.querySelector('.long'); return e.scrollHeight > e.clientHeight })()`)
		assert.True(t, overflow, "the long text scrolls in its box")
		danger := eval[string](tb, `getComputedStyle(document.querySelector('button.danger')).backgroundColor`)
		assert.Equal(t, "rgb(179, 38, 30)", danger, "the destructive button is red")
		names = tb.axNames("the confirmation screen")
		assert.Contains(t, names["button"], "Confirm and delete")
		assert.Contains(t, names["button"], "Reject")
		assert.Contains(t, names["region"], fmt.Sprintf("Text at /note, %d characters", len([]rune(long))))
		tb.shot("change")
		tb.quiet("the confirmation screen")

		tb.tabTo("Confirm and delete")
		tb.do(chromedp.KeyEvent(kb.Enter))
		tb.settle()
		assert.Equal(t, "Done", tb.text("h1"))
		assert.Contains(t, tb.text(".value"), "apples")
		tb.shot("done")
		tb.quiet("the done page")

		tb.click(`p.links a:last-child`)
		assert.Contains(t, tb.text("main"), "No change waits for you")
		tb.quiet("the empty list")

		tb.open("/ui/log")
		first := tb.text("table.log tbody tr:first-child")
		assert.Contains(t, first, "shop/discard")
		assert.Contains(t, first, "confirmed · done")
		assert.Contains(t, tb.text("table.log tbody tr:nth-child(2)"), "held")
		tb.axNames("the run log")
		tb.shot("log")
		tb.quiet("the run log")

		tb.click(`table.log tbody tr:first-child a`)
		rec := eval[string](tb, `document.querySelector("main").textContent`)
		for _, want := range []string{"shop/discard", "Audit record", "editor", "Pending change", id, "Step 1: command", "discard", "more not shown"} {
			assert.Contains(t, rec, want)
		}
		tb.axNames("a record")
		tb.shot("record")
		tb.quiet("a record")
		tb.click(`aside form button`)
		assert.Contains(t, eval[string](tb, `document.querySelector("aside").textContent`), "Same: the call does again what the record says")
		tb.quiet("a replay")
	})
}

// TestBrowserReject: rejecting runs nothing and the change is gone; the
// screen then says it was decided already.
func TestBrowserReject(t *testing.T) {
	pagestest.EachEngine(t, nil, func(t *testing.T, f *pagestest.Fixture) {
		id := f.Hold("editor", map[string]any{"item": "pears", "count": 3})
		tb := newTab(t, f)
		tb.open("/login/editor")
		tb.open("/ui/changes/" + id)
		tb.click(`button.secondary`)
		assert.Equal(t, "Rejected: nothing ran", tb.text("h1"))
		tb.shot("rejected")
		tb.quiet("the rejected page")
		tb.open("/ui/")
		assert.Contains(t, tb.text("main"), "No change waits for you")
		tb.open("/ui/changes/" + id)
		assert.Equal(t, "This change was already decided", tb.text("h1"))
		tb.shot("decided")
		tb.forget() // a 409 is logged by the browser as a failed load
		tb.open("/ui/log?outcome=rejected")
		assert.Contains(t, tb.text("table.log tbody"), "rejected", "the rejection's record")
		tb.quiet("the log")
	})
}

// TestBrowserExpired: a screen opened before the expiry, confirmed after
// it, says the change expired; nothing ran.
func TestBrowserExpired(t *testing.T) {
	pagestest.EachEngine(t, nil, func(t *testing.T, f *pagestest.Fixture) {
		id := f.Hold("editor", map[string]any{"item": "plums"})
		f.Clock.Add(7*24*time.Hour - time.Hour)
		tb := newTab(t, f)
		tb.open("/login/editor")
		tb.open("/ui/changes/" + id)
		assert.Contains(t, tb.text("dl.facts"), "in 1 hour")
		f.Clock.Add(2 * time.Hour)
		tb.click(`button.danger`)
		assert.Equal(t, "This change expired", tb.text("h1"))
		assert.Contains(t, tb.text("main"), "Nothing ran")
		tb.shot("expired")
		tb.forget() // a 410
		tb.open("/ui/log?outcome=done")
		assert.Contains(t, tb.text("main"), "No record matches")
	})
}

// TestBrowserViewerGetsNoScreen: another person gets the 404 of an
// unknown address, with nothing of the change in it.
func TestBrowserViewerGetsNoScreen(t *testing.T) {
	pagestest.EachEngine(t, nil, func(t *testing.T, f *pagestest.Fixture) {
		id := f.Hold("editor", map[string]any{"item": "secret-quinces"})
		tb := newTab(t, f)
		tb.open("/login/viewer")
		tb.open("/ui/changes/" + id)
		assert.Equal(t, "Not Found", tb.text("h1"))
		body := tb.text("body")
		assert.NotContains(t, body, "secret-quinces")
		assert.NotContains(t, body, "Discard")
		assert.Zero(t, eval[int](tb, `document.querySelectorAll('form[method=post]').length`), "no form")
		tb.shot("not-found")
		tb.forget()
		tb.open("/ui/")
		assert.NotContains(t, tb.text("main"), "Discard stock")
		tb.quiet("the viewer's list")
	})
}

// TestBrowserForgedPost: the confirm form with its token removed is
// refused (403) and the change stays pending.
func TestBrowserForgedPost(t *testing.T) {
	pagestest.EachEngine(t, nil, func(t *testing.T, f *pagestest.Fixture) {
		id := f.Hold("editor", map[string]any{"item": "figs"})
		tb := newTab(t, f)
		tb.open("/login/editor")
		tb.open("/ui/changes/" + id)
		eval[bool](tb, `(() => { document.querySelectorAll('input[name=csrf]').forEach(e => e.remove()); return true })()`)
		tb.click(`button.danger`)
		assert.Equal(t, "Forbidden", tb.text("h1"))
		assert.Contains(t, tb.text("main"), "Nothing was done")
		tb.forget()
		tb.open("/ui/")
		assert.Contains(t, tb.text("main"), "Discard stock", "still pending")
		tb.quiet("the list")
	})
}

// TestBrowserRunLog: newest first, pages by cursor, and each filter:
// action, outcome, refusal code, caller, time range.
func TestBrowserRunLog(t *testing.T) {
	pagestest.EachEngine(t, &pages.Options{Base: "/ui", Title: "Shop", PageSize: 5}, func(t *testing.T, f *pagestest.Fixture) {
		start := f.Clock.Now()
		for i := range 12 {
			f.Clock.Add(time.Minute)
			who := "editor"
			if i%3 == 2 {
				who = "alice"
			}
			switch {
			case i == 4 || i == 9:
				assert.Error(t, f.Call(who, "shop/restock", map[string]any{"item": "kiwis", "count": 0}))
			case i%2 == 0:
				require.NoError(t, f.Call(who, "shop/restock", map[string]any{"item": fmt.Sprintf("item-%d", i), "count": 2}))
			default:
				require.NoError(t, f.Call(who, "shop/count", map[string]any{"item": fmt.Sprintf("item-%d", i)}))
			}
		}
		tb := newTab(t, f)
		tb.open("/login/editor")
		tb.open("/ui/log")
		ids := func() []string {
			return eval[[]string](tb, `[...document.querySelectorAll('table.log tbody tr td:last-child a')].map(a => a.textContent)`)
		}
		seen := []string{}
		for page := 0; ; page++ {
			got := ids()
			seen = append(seen, got...)
			if page < 2 {
				assert.Len(t, got, 5, "page %d", page)
			}
			if !eval[bool](tb, `!!document.querySelector('a[rel=next]')`) {
				break
			}
			tb.click(`a[rel=next]`)
			require.Less(t, page, 5)
		}
		want := []string{}
		for i := 12; i >= 1; i-- {
			want = append(want, fmt.Sprintf("#%d", i))
		}
		assert.Equal(t, want, seen, "every record once, newest first")
		tb.quiet("the pages")

		tb.open("/ui/log")
		tb.do(chromedp.SetValue(chromedp.CSS(`#f-outcome`), "refused"))
		tb.click(`form.filters button[type=submit]`)
		rows := eval[[]string](tb, `[...document.querySelectorAll('table.log tbody tr')].map(r => r.innerText)`)
		assert.Len(t, rows, 2)
		for _, r := range rows {
			assert.Contains(t, r, "refused: invalid_parameters")
		}
		tb.shot("log-filtered")

		tb.open("/ui/log?code=invalid_parameters&caller=alice")
		assert.Len(t, ids(), 0, "both refusals were the editor's")
		tb.open("/ui/log?caller=alice")
		assert.Len(t, ids(), 4)
		tb.open("/ui/log?action=shop%2Fcount")
		assert.Len(t, ids(), 5, "shop/count: 5 direct calls (nested ones are steps)")
		since := start.Add(6 * time.Minute).Format("2006-01-02T15:04")
		until := start.Add(9 * time.Minute).Format("2006-01-02T15:04")
		tb.open("/ui/log")
		tb.do(chromedp.SetValue(chromedp.CSS(`#f-since`), since), chromedp.SetValue(chromedp.CSS(`#f-until`), until))
		tb.click(`form.filters button[type=submit]`)
		assert.Equal(t, []string{"#8", "#7", "#6"}, ids(), "from minute 6 until minute 9")
		names := tb.axNames("the filtered log")
		for _, label := range []string{"Action", "Refusal code", "Caller"} {
			assert.Contains(t, names["textbox"], label)
		}
		for _, label := range []string{"From (UTC)", "Until (UTC)"} {
			assert.Contains(t, names["DateTime"], label, "a date field's name: %v", names)
		}
		assert.Contains(t, names["combobox"], "Outcome")
		tb.quiet("the filters")

		tb.open("/login/viewer")
		tb.open("/ui/log")
		assert.Contains(t, tb.text("main"), "No record matches", "the viewer sees only their own calls")
		tb.quiet("the viewer's log")
	})
}

// TestBrowserSupervisorConfirms: an agent (on mcp) proposes a purge whose
// approval reserves the decision to holders of shop.approve, never the
// proposer (four eyes). In headless Chromium the supervisor finds it in
// their list, with the proposer, opens the screen (the host's
// description, the arguments with their default), confirms it and sees
// it done; the log says who confirmed.
func TestBrowserSupervisorConfirms(t *testing.T) {
	pagestest.People["boss"] = &identity.Caller{Principal: "boss", Capabilities: []string{"shop.read", "shop.write", "shop.approve"}, Surface: identity.SurfaceUI}
	t.Cleanup(func() { delete(pagestest.People, "boss") })
	pagestest.EachEngine(t, nil, func(t *testing.T, f *pagestest.Fixture) {
		ran := 0
		f.Reg.MustRegister(actions.New(actions.Definition{ID: "shop/purge", Title: "Purge an aisle", Capability: "shop.write",
			Description: "Removes every item of an aisle from the stock.",
			Effect:      actions.EffectDelete, NeedsConfirmation: true,
			Approval: &actions.Approval{Capability: "shop.approve", Proposer: actions.ProposerNever,
				Describe: func(_ context.Context, c actions.CheckedCall) (string, error) {
					return fmt.Sprintf("Aisle %v: 41 items, last counted on Monday", c.Params["aisle"]), nil
				}},
			Parameters: `{"type":"object","properties":{"aisle":{"type":"integer"},"keep":{"type":"string","default":"labels"}}}`},
			func(context.Context, map[string]any, *actions.Trace) (any, error) { ran++; return "purged", nil }))
		agent := &identity.Caller{Principal: "agent", Capabilities: []string{"shop.read", "shop.write"}, Surface: identity.SurfaceMCP}
		_, err := f.Reg.Run(context.Background(), actions.Call{Action: "shop/purge", Params: `{"aisle":4}`, Caller: agent})
		var r *actions.Refusal
		require.ErrorAs(t, err, &r)
		id := r.Pending.ID

		tb := newTab(t, f)
		tb.open("/login/boss")
		list := tb.text("main")
		assert.Contains(t, list, "Purge an aisle", "the agent's change is in the supervisor's list")
		assert.Contains(t, list, "agent")
		tb.shot("approver-list")
		tb.quiet("the approver's list")

		tb.click(`a.change-link`)
		assert.Equal(t, "/ui/changes/"+id, eval[string](tb, `location.pathname`))
		main := tb.text("main")
		for _, want := range []string{"Purge an aisle", "Aisle 4: 41 items, last counted on Monday", "agent", "labels"} {
			assert.Contains(t, main, want)
		}
		assert.Contains(t, tb.axNames("the approver's screen")["button"], "Confirm and delete")
		tb.shot("approver-change")
		tb.quiet("the approver's screen")
		assert.Zero(t, ran)

		tb.click(`button.danger`)
		assert.Equal(t, "Done", tb.text("h1"))
		assert.Equal(t, 1, ran)
		tb.quiet("the done page")
		tb.open("/ui/")
		assert.NotContains(t, tb.text("main"), "Purge an aisle", "decided: gone from the list")

		recs, err := f.Store.Read(context.Background(), sqlstore.Filter{PendingChange: id, Stages: []store.Stage{store.StageConfirmed}})
		require.NoError(t, err)
		require.Len(t, recs, 1)
		assert.Equal(t, "boss", recs[0].Audit.Caller.Principal)

		// An edit: the supervisor opens the form, writes other
		// arguments and confirms them; the answer shows the difference.
		f.Reg.MustRegister(actions.New(actions.Definition{ID: "shop/trim", Title: "Trim an aisle", Capability: "shop.write",
			Effect: actions.EffectDelete, NeedsConfirmation: true, Approval: &actions.Approval{Capability: "shop.approve"},
			Parameters: `{"type":"object","properties":{"aisle":{"type":"integer"},"keep":{"type":"string","default":"labels"}}}`},
			func(context.Context, map[string]any, *actions.Trace) (any, error) { ran++; return "trimmed", nil }))
		_, err = f.Reg.Run(context.Background(), actions.Call{Action: "shop/trim", Params: `{"aisle":7}`, Caller: agent})
		require.ErrorAs(t, err, &r)
		tb.open("/ui/changes/" + r.Pending.ID)
		tb.do(chromedp.Click(chromedp.CSS(`details.edit summary`), chromedp.NodeVisible))
		tb.do(chromedp.SetValue(chromedp.CSS(`#edit-params`), `{"aisle":8,"keep":"nothing"}`))
		tb.axNames("the edit form")
		tb.click(`details.edit button`)
		assert.Equal(t, "Done", tb.text("h1"))
		diff := tb.text("table.diff")
		for _, want := range []string{"aisle", "7", "8", "keep", "labels", "nothing"} {
			assert.Contains(t, diff, want)
		}
		assert.Equal(t, 2, ran)
		tb.shot("approver-edited")
		tb.quiet("the edit's answer")
	})
}
