package browsertest_test

import (
	"context"
	"fmt"
	"html"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/actionreg/actions"
	"github.com/actionreg/actions/mcpserver"
)

// TestConfirmViewInABrowser runs the MCP Apps confirmation view in
// headless Chromium, in a frame of a page that plays the MCP Apps host:
// the view must ask ui/initialize, say it is initialized, render the held
// call's receipt from ui/notifications/tool-result, and ask ui/open-link
// with the receipt's confirmUrl when the person presses its button.
// Without a Chromium it skips, saying so (CI installs one).
func TestConfirmViewInABrowser(t *testing.T) {
	path := chromium()
	if path == "" {
		t.Skip("browser test skipped: no Chromium found (install Debian's chromium, or set CHROME)")
	}
	view := readConfirmView(t)
	result := `{"content":[{"type":"text","text":"refused: confirmation_required"}],"isError":true,
		"structuredContent":{"code":"confirmation_required","pending":{"id":"c0ffee","action":"shop/discard",
		"expires":"2026-12-08T03:00:00Z","steps":[{"index":1,"action":"shop/discard"}]},
		"confirmUrl":"https://host.example/changes/c0ffee"}}`
	host := `<!DOCTYPE html><html><body><iframe id="v" srcdoc="` + html.EscapeString(view) + `"></iframe><script>
		window.seen = []; window.opened = "";
		var frame = document.getElementById("v");
		window.addEventListener("message", function (e) {
			if (e.source !== frame.contentWindow) return;
			var m = e.data; window.seen.push(m.method || "reply");
			var reply = function (r) { frame.contentWindow.postMessage({jsonrpc: "2.0", id: m.id, result: r}, "*"); };
			if (m.method === "ui/initialize") reply({protocolVersion: "2026-01-26", hostCapabilities: {openLinks: {}}, hostInfo: {name: "test-host", version: "1"}, hostContext: {}});
			if (m.method === "ui/notifications/initialized") frame.contentWindow.postMessage({jsonrpc: "2.0", method: "ui/notifications/tool-result", params: ` + result + `}, "*");
			if (m.method === "ui/open-link") { window.opened = m.params.url; reply({}); }
		});
	</script></body></html>`
	web := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		fmt.Fprint(w, host)
	}))
	defer web.Close()

	opts := []chromedp.ExecAllocatorOption{
		chromedp.ExecPath(path), chromedp.Headless, chromedp.NoSandbox, chromedp.DisableGPU,
		chromedp.NoFirstRun, chromedp.NoDefaultBrowserCheck, chromedp.UserDataDir(t.TempDir()),
		chromedp.Flag("disable-quic", true), chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true), chromedp.Flag("disable-sync", true),
	}
	actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	defer cancelAlloc()
	ctx, cancelTab := chromedp.NewContext(actx)
	defer cancelTab()
	ctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	require.NoError(t, chromedp.Do(ctx, chromedp.Navigate(web.URL)))
	eval := func(js string) string {
		v, err := chromedp.Run(ctx, chromedp.Evaluate[string](js))
		require.NoError(t, err, js)
		return v
	}
	inFrame := `document.getElementById("v").contentDocument`
	// Wait for the handshake and the render (polled: no time asserted).
	for range 4800 { // 25 ms each: up to the tab's 2-minute deadline, on a loaded machine
		if eval(inFrame+`.getElementById("open").hidden ? "" : "shown"`) == "shown" {
			break
		}
		require.NoError(t, chromedp.Do(ctx, chromedp.Sleep(25*time.Millisecond)))
	}
	assert.Equal(t, "ui/initialize,ui/notifications/initialized", eval(`window.seen.join(",")`), "the handshake, in order")
	assert.Contains(t, eval(inFrame+`.getElementById("what").textContent`), "shop/discard")
	assert.Equal(t, "step 1: shop/discard", eval(inFrame+`.getElementById("steps").textContent`))
	assert.Equal(t, "Open the confirmation screen", eval(inFrame+`.getElementById("open").getAttribute("aria-label")`))
	eval(inFrame + `.getElementById("open").click(), ""`)
	for range 4800 { // 25 ms each: up to the tab's 2-minute deadline, on a loaded machine
		if eval(`window.opened`) != "" {
			break
		}
		require.NoError(t, chromedp.Do(ctx, chromedp.Sleep(25*time.Millisecond)))
	}
	assert.Equal(t, "https://host.example/changes/c0ffee", eval(`window.opened`), "the view asks the host to open the screen")
}

// readConfirmView reads the view as a client does: resources/read.
func readConfirmView(t *testing.T) string {
	t.Helper()
	reg := actions.NewRegistry(nil)
	reg.MustRegister(actions.New(actions.Definition{ID: "shop/discard", Effect: actions.EffectDelete, NeedsConfirmation: true},
		func(context.Context, map[string]any, *actions.Trace) (any, error) { return nil, nil }))
	server := mcp.NewServer(&mcp.Implementation{Name: "shop", Version: "v1"}, nil)
	require.NoError(t, mcpserver.AddTools(server, reg, &mcpserver.Options{ConfirmURL: func(id string) string { return "https://host.example/changes/" + id }}))
	ctx := context.Background()
	ct, st := mcp.NewInMemoryTransports()
	ss, err := server.Connect(ctx, st, nil)
	require.NoError(t, err)
	t.Cleanup(func() { _ = ss.Close() })
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "c", Version: "v1"}, nil).Connect(ctx, ct, nil)
	require.NoError(t, err)
	t.Cleanup(func() { _ = cs.Close() })
	res, err := cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: mcpserver.ConfirmViewURI})
	require.NoError(t, err)
	return res.Contents[0].Text
}
