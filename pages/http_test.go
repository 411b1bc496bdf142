package pages_test

import (
	"io"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/actionreg/actions/internal/pagestest"
)

func get(t *testing.T, c *http.Client, u string) (*http.Response, string) {
	t.Helper()
	res, err := c.Get(u)
	require.NoError(t, err)
	b, err := io.ReadAll(res.Body)
	require.NoError(t, err)
	_ = res.Body.Close()
	return res, string(b)
}

var csrfRe = regexp.MustCompile(`action="([^"]+/(confirm|reject|edit|replay))">\s*<input type="hidden" name="csrf" value="([^"]+)"`)

// forms returns the forms' targets and tokens of a page, by decision.
func forms(body string) map[string][2]string {
	out := map[string][2]string{}
	for _, m := range csrfRe.FindAllStringSubmatch(body, -1) {
		out[m[2]] = [2]string{m[1], m[3]}
	}
	return out
}

// TestEveryPageSendsItsHeaders: CSP without script, no framing, no store,
// on every page including errors.
func TestEveryPageSendsItsHeaders(t *testing.T) {
	pagestest.EachEngine(t, nil, func(t *testing.T, f *pagestest.Fixture) {
		id := f.Hold("editor", map[string]any{"item": "apples"})
		c := f.Client("editor")
		for _, path := range []string{"/ui/", "/ui/changes/" + id, "/ui/log", "/ui/log/1", "/ui/nope", "/ui/changes/unknown"} {
			t.Run(path, func(t *testing.T) {
				res, body := get(t, c, f.Srv.URL+path)
				csp := res.Header.Get("Content-Security-Policy")
				assert.Contains(t, csp, "default-src 'none'")
				assert.Contains(t, csp, "frame-ancestors 'none'")
				assert.NotContains(t, csp, "unsafe-inline")
				assert.NotContains(t, csp, "script-src")
				assert.Equal(t, "DENY", res.Header.Get("X-Frame-Options"))
				assert.Equal(t, "no-store", res.Header.Get("Cache-Control"))
				assert.NotContains(t, body, "<script")
			})
		}
	})
}

// TestOnlyTheProposerSeesAChange: another editor, a viewer and nobody get
// the same 404 as an unknown id, with no detail of the change.
func TestOnlyTheProposerSeesAChange(t *testing.T) {
	pagestest.EachEngine(t, nil, func(t *testing.T, f *pagestest.Fixture) {
		id := f.Hold("editor", map[string]any{"item": "secret-pears"})
		_, unknown := get(t, f.Client("alice"), f.Srv.URL+"/ui/changes/0123456789abcdef0123456789abcdef")
		for _, who := range []string{"alice", "viewer"} {
			res, body := get(t, f.Client(who), f.Srv.URL+"/ui/changes/"+id)
			assert.Equal(t, http.StatusNotFound, res.StatusCode, who)
			assert.NotContains(t, body, "secret-pears", who)
			assert.NotContains(t, body, "shop/discard", who)
			assert.Equal(t, strings.ReplaceAll(unknown, "alice", who), body, "%s: the same page as for an unknown id", who)
			_, list := get(t, f.Client(who), f.Srv.URL+"/ui/")
			assert.NotContains(t, list, id, who)
		}
		res, _ := get(t, http.DefaultClient, f.Srv.URL+"/ui/changes/"+id)
		assert.Equal(t, http.StatusUnauthorized, res.StatusCode)
		// Nor can they decide it, even with the editor's form.
		_, page := get(t, f.Client("editor"), f.Srv.URL+"/ui/changes/"+id)
		form := forms(page)["confirm"]
		res, err := f.Client("alice").PostForm(f.Srv.URL+form[0], url.Values{"csrf": {form[1]}})
		require.NoError(t, err)
		_ = res.Body.Close()
		assert.Equal(t, http.StatusForbidden, res.StatusCode, "the token is the editor's")
		_, page = get(t, f.Client("editor"), f.Srv.URL+"/ui/changes/"+id)
		assert.Contains(t, page, "secret-pears", "still pending")
	})
}

// TestForgedPostsAreRefused: no token, a token for another change, an old
// token, a cross-site request: 403, and the change is still pending.
func TestForgedPostsAreRefused(t *testing.T) {
	pagestest.EachEngine(t, nil, func(t *testing.T, f *pagestest.Fixture) {
		id := f.Hold("editor", map[string]any{"item": "apples"})
		other := f.Hold("editor", map[string]any{"item": "pears"})
		c := f.Client("editor")
		_, page := get(t, c, f.Srv.URL+"/ui/changes/"+other)
		otherTok := forms(page)["confirm"][1]
		_, page = get(t, c, f.Srv.URL+"/ui/changes/"+id)
		tok := forms(page)["confirm"][1]
		target := f.Srv.URL + "/ui/changes/" + id + "/confirm"
		post := func(form url.Values, header http.Header) int {
			req, _ := http.NewRequest("POST", target, strings.NewReader(form.Encode()))
			req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
			for k, v := range header {
				req.Header[k] = v
			}
			res, err := c.Do(req)
			require.NoError(t, err)
			_ = res.Body.Close()
			return res.StatusCode
		}
		assert.Equal(t, http.StatusForbidden, post(url.Values{}, nil), "no token")
		assert.Equal(t, http.StatusForbidden, post(url.Values{"csrf": {"garbage"}}, nil), "garbage")
		assert.Equal(t, http.StatusForbidden, post(url.Values{"csrf": {otherTok}}, nil), "another change's token")
		assert.Equal(t, http.StatusForbidden, post(url.Values{"csrf": {tok}}, http.Header{"Sec-Fetch-Site": {"cross-site"}}), "cross-site")
		f.Clock.Add(13 * time.Hour)
		assert.Equal(t, http.StatusForbidden, post(url.Values{"csrf": {tok}}, nil), "an old token")
		f.Clock.Add(-13 * time.Hour)
		res, body := get(t, c, f.Srv.URL+"/ui/changes/"+id)
		assert.Equal(t, http.StatusOK, res.StatusCode)
		assert.Contains(t, body, "apples", "still pending")
		assert.Equal(t, http.StatusOK, post(url.Values{"csrf": {tok}}, nil), "the page's own token")
	})
}

// TestEntryJSONIsWhole: the link of a cut value gives the entry's
// canonical text byte for byte.
func TestEntryJSONIsWhole(t *testing.T) {
	pagestest.EachEngine(t, nil, func(t *testing.T, f *pagestest.Fixture) {
		long := strings.Repeat("x", 20000)
		require.NoError(t, f.Call("editor", "shop/count", map[string]any{"item": long}))
		c := f.Client("editor")
		_, page := get(t, c, f.Srv.URL+"/ui/log/1")
		assert.Contains(t, page, "more not shown")
		assert.NotContains(t, page, long)
		res, body := get(t, c, f.Srv.URL+"/ui/log/1/entry.json")
		assert.Equal(t, "application/json; charset=utf-8", res.Header.Get("Content-Type"))
		assert.Contains(t, body, long)
		assert.True(t, strings.HasPrefix(body, `{"action":"shop/count"`), body[:40])
		res, _ = get(t, f.Client("viewer"), f.Srv.URL+"/ui/log/1/entry.json")
		assert.Equal(t, http.StatusNotFound, res.StatusCode, "the viewer reads only their own calls")
	})
}

// TestRefusedConfirmation: a confirmation the call refuses says so, with
// its code and a link to its record (rolled back, in the log all the
// same), and leaves the change to decide again; once rejected, the
// screen says it was decided, and the log's filters find one record each
// (refused: the refused confirmation, not the held call nor the
// rejection).
func TestRefusedConfirmation(t *testing.T) {
	pagestest.EachEngine(t, nil, func(t *testing.T, f *pagestest.Fixture) {
		id := f.Hold("editor", map[string]any{"item": "locked"})
		c := f.Client("editor")
		post := func(decision string) (int, string) {
			_, page := get(t, c, f.Srv.URL+"/ui/changes/"+id)
			form := forms(page)[decision]
			require.NotEmpty(t, form[0], "the %s form", decision)
			res, err := c.PostForm(f.Srv.URL+form[0], url.Values{"csrf": {form[1]}})
			require.NoError(t, err)
			b, err := io.ReadAll(res.Body)
			require.NoError(t, err)
			_ = res.Body.Close()
			return res.StatusCode, string(b)
		}
		status, body := post("confirm")
		require.Equal(t, http.StatusOK, status)
		assert.Contains(t, body, "Confirmed, not done")
		assert.Contains(t, body, "stock_locked")
		m := regexp.MustCompile(`href="(/ui/log/\d+)"`).FindStringSubmatch(body)
		require.NotNil(t, m, "a link to the confirmation's record")
		res, rec := get(t, c, f.Srv.URL+m[1])
		assert.Equal(t, http.StatusOK, res.StatusCode)
		assert.Contains(t, rec, "stock_locked")

		res, _ = get(t, c, f.Srv.URL+"/ui/changes/"+id)
		assert.Equal(t, http.StatusOK, res.StatusCode, "still pending")
		status, body = post("reject")
		require.Equal(t, http.StatusOK, status)
		assert.Contains(t, body, "Rejected: nothing ran")
		res, _ = get(t, c, f.Srv.URL+"/ui/changes/"+id)
		assert.Equal(t, http.StatusConflict, res.StatusCode, "decided")

		for outcome, want := range map[string]string{"held": "held", "refused": "confirmed · refused: stock_locked", "confirmed": "confirmed · refused: stock_locked", "rejected": "rejected"} {
			_, log := get(t, c, f.Srv.URL+"/ui/log?outcome="+outcome)
			assert.Equal(t, 1, strings.Count(log, "<tr>")-1, "%s: one record beside the head row", outcome)
			assert.Contains(t, log, want, outcome)
		}
	})
}
