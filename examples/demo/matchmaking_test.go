//go:build !js

package main

import (
	"context"
	"encoding/json"
	"math"
	"net/http"
	"net/http/httptest"
	"strconv"
	"testing"
	"time"
)

// TestPlayQueuesWithBotsNearTheRating: the Play button's endpoint puts a
// player rated 40 in a free-for-all of four with bots rated near 40 (the
// bots' ratings span the range), in a room of its own whose ticket is
// made; bad ratings are refused; a page that goes away leaves the line.
func TestPlayQueuesWithBotsNearTheRating(t *testing.T) {
	d := serveSmallDemo(t)
	web := httptest.NewServer(d.handler())
	defer web.Close()

	get := func(query string) (*http.Response, matchResult) {
		t.Helper()
		resp, err := http.Get(web.URL + "/demo/queue?game=arena" + query)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var res matchResult
		if resp.StatusCode == http.StatusOK {
			if err := json.NewDecoder(resp.Body).Decode(&res); err != nil {
				t.Fatal(err)
			}
		}
		return resp, res
	}
	for i, mu := range []float64{40, 10} {
		// The second page says the round trip it measured (the Play
		// button's engine.MeasureRegions): 180 ms, within the mode's.
		rtt := []string{"", "&rtt=180"}[i]
		resp, res := get("&mu=" + strconv.FormatFloat(mu, 'g', -1, 64) + "&sigma=2" + rtt)
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("queue at %v: %s", mu, resp.Status)
		}
		if len(res.Others) != arenaPlayers-1 || res.Rating.Mu != mu || res.RTTMs != []int{0, 180}[i] {
			t.Fatalf("match %+v", res)
		}
		for _, o := range res.Others {
			if !o.Bot || math.Abs(o.Rating.Mu-mu) > 12 {
				t.Errorf("player rated %v matched with %+v", mu, o)
			}
		}
		if _, ok := d.srv.Room(res.Room); !ok || res.Ticket == "" || res.Player == "" {
			t.Fatalf("room %s not made, or no ticket: %+v", res.Room, res)
		}
	}
	for _, bad := range []string{"&mu=NaN", "&mu=x", "&sigma=0", "&sigma=-1", "&mu=1e9", "&rtt=0", "&rtt=x", "&rtt=99999"} {
		if resp, _ := get(bad); resp.StatusCode != http.StatusBadRequest {
			t.Errorf("%s: %s, want 400", bad, resp.Status)
		}
	}
	// A page that goes away leaves the line.
	qctx, qcancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer qcancel()
	req, _ := http.NewRequestWithContext(qctx, "GET", web.URL+"/demo/queue?game=arena&mu=1000&sigma=1", nil)
	if _, err := http.DefaultClient.Do(req); err == nil {
		t.Fatal("a player rated 1000 was matched at once")
	}
	time.Sleep(100 * time.Millisecond)
	d.lobby.mu.Lock()
	waiting := len(d.lobby.wait)
	d.lobby.mu.Unlock()
	if waiting != 0 {
		t.Errorf("%d people in line after their pages went away", waiting)
	}
}
