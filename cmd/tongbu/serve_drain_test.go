//go:build !js

package main

import (
	"net/http"
	"net/http/httptest"
	"testing"
)

// TestDrainHandler: POST /drain, with the metrics token when one is set,
// starts the drain once; anything else is refused and starts nothing.
func TestDrainHandler(t *testing.T) {
	drain := make(chan struct{}, 1)
	h := drainHandler("s3cret", drain)
	for _, tc := range []struct {
		name, method, auth string
		code               int
		drains             bool
	}{
		{"a GET", http.MethodGet, "Bearer s3cret", http.StatusMethodNotAllowed, false},
		{"no token", http.MethodPost, "", http.StatusUnauthorized, false},
		{"a wrong token", http.MethodPost, "Bearer guess", http.StatusUnauthorized, false},
		{"the token", http.MethodPost, "Bearer s3cret", http.StatusAccepted, true},
		{"again, under way", http.MethodPost, "Bearer s3cret", http.StatusAccepted, false},
	} {
		r := httptest.NewRequest(tc.method, drainPath, nil)
		if tc.auth != "" {
			r.Header.Set("Authorization", tc.auth)
		}
		w := httptest.NewRecorder()
		before := len(drain) // a drain asked for and not yet taken stays under way
		h.ServeHTTP(w, r)
		if w.Code != tc.code {
			t.Errorf("%s: %d, want %d", tc.name, w.Code, tc.code)
		}
		if started := len(drain) > before; started != tc.drains {
			t.Errorf("%s: drain started %v, want %v", tc.name, started, tc.drains)
		}
	}
}
