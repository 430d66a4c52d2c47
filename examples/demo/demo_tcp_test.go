//go:build linux

package main

import (
	"context"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/tongbu/tongbu/internal/netns"
	"github.com/tongbu/tongbu/interop/browser"
)

// TestBlockedUDPInBrowser: Chromium on a network that drops every UDP
// datagram (a network namespace with a firewall) plays the demo over
// ICE-TCP: an arena match, whose frame hashes equal the bots', and the
// MMO world, which advances and shows moving entities.
func TestBlockedUDPInBrowser(t *testing.T) {
	ns := netns.ForTest(t, netns.Options{BlockUDP: true})
	u := startDemoAt(t, ns.Host.String())
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	inNS := func(ctx context.Context) (context.Context, context.CancelFunc, error) { return browser.NewIn(ctx, ns) }

	a, stopA := openPageWith(t, ctx, u.web.URL+"/arena.html", `window.tongbuArena && tongbuArena.frame > 15`, inNS)
	compared := 0
	for end := time.Now().Add(5 * time.Second); time.Now().Before(end); time.Sleep(time.Second) {
		compared += len(u.sameHashes(t, a, `tongbuArena.hashes`, "arena-1", "page", nil))
	}
	var frame int
	chromedp.Run(a, chromedp.Evaluate(`tongbuArena.frame`, &frame))
	if compared < 25 {
		t.Fatalf("arena over TCP: frame %d, %d hashes compared with the bots'", frame, compared)
	}
	t.Logf("arena over TCP: frame %d, %d page hashes equal to the bots'", frame, compared)
	stopA()

	m, stopM := openPageWith(t, ctx, u.web.URL+"/mmo.html", `window.tongbuMMO && tongbuMMO.ready && tongbuMMO.frame > 32 && tongbuMMO.known > 5`, inNS)
	defer stopM()
	type snap struct{ Frame, Known, Moving int }
	var s1, s2 snap
	chromedp.Run(m, chromedp.Evaluate(`({Frame: tongbuMMO.frame, Known: tongbuMMO.known, Moving: tongbuMMO.moving})`, &s1))
	time.Sleep(2 * time.Second)
	chromedp.Run(m, chromedp.Evaluate(`({Frame: tongbuMMO.frame, Known: tongbuMMO.known, Moving: tongbuMMO.moving})`, &s2))
	if s2.Frame < s1.Frame+16 || s2.Moving == 0 {
		t.Fatalf("the MMO page over TCP does not advance: %+v then %+v", s1, s2)
	}
	t.Logf("mmo over TCP: %+v then %+v", s1, s2)
	st := u.d.srv.DataPath()
	if st.TCPPaths < 2 || st.Datagrams != 0 {
		t.Errorf("TCP paths %d (want 2, one a page), UDP datagrams %d (want 0: UDP is blocked)", st.TCPPaths, st.Datagrams)
	}
}
