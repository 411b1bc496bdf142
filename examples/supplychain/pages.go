package main

import (
	"crypto/subtle"
	"net/http"
	"slices"

	"github.com/actionreg/actions"
	"github.com/actionreg/actions/identity"
	"github.com/actionreg/actions/pages"
)

// newPages returns the pages for people (package pages), served at /ui/: the
// person's pending changes, each one's confirmation screen, and the run
// log. A browser signs in with HTTP Basic authentication, the user name
// and one of the demo tokens as the password (editor / editor-demo-token,
// viewer / viewer-demo-token): the example's stand-in for a host's own
// sign-in. The editor reads the whole run log; the viewer only their own
// calls.
func newPages(reg *actions.Registry, model *Model) (http.Handler, error) {
	h, err := pages.New(reg, model.Store(), &pages.Options{
		Caller:  pageCaller,
		SeesAll: func(who *identity.Caller) bool { return slices.Contains(who.Capabilities, capWrite) },
		Base:    "/ui",
		Title:   "Supply chain",
	})
	if err != nil {
		return nil, err
	}
	return basicAuth(h), nil
}

// pageCaller is the person signed in with Basic authentication, on the
// ui surface; nil when the credentials are not a demo user's.
func pageCaller(r *http.Request) *identity.Caller {
	user, token, ok := r.BasicAuth()
	if !ok {
		return nil
	}
	ti, known := demoTokens[token]
	if !known || subtle.ConstantTimeCompare([]byte(ti.UserID), []byte(user)) != 1 {
		return nil
	}
	return &identity.Caller{Principal: user, Capabilities: principals[user], Surface: identity.SurfaceUI}
}

// basicAuth asks the browser to sign in when the request has no demo
// user's credentials.
func basicAuth(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if pageCaller(r) == nil {
			w.Header().Set("WWW-Authenticate", `Basic realm="supplychain", charset="UTF-8"`)
			http.Error(w, "sign in: user editor or viewer, password its demo token", http.StatusUnauthorized)
			return
		}
		next.ServeHTTP(w, r)
	})
}
