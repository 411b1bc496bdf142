// Package browsertest holds the tests that run the library's HTML in a
// real browser: the pages for people (package pages) and the MCP Apps
// confirmation view (package mcpserver), each driven in a headless
// Chromium through chromedp. It is a module of its own so that the
// library's module does not require a browser driver; go.work at the
// repository's root makes go test work run it with the rest. The tests
// skip, saying so, when no Chromium is found ($CHROME, then chromium,
// chromium-browser, google-chrome on PATH).
package browsertest
