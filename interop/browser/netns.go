//go:build linux

package browser

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/tongbu/tongbu/internal/netns"
)

// NewIn starts headless Chromium inside the network namespace ns, as a
// player's browser on another network, and returns a chromedp context for
// one tab, as New does. Its pages reach servers at ns.Host. The test
// drives it through a proxy on its own loopback: Chromium's DevTools
// listens on the namespace's.
func NewIn(ctx context.Context, ns *netns.NS) (context.Context, context.CancelFunc, error) {
	exe, err := Path()
	if err != nil {
		return nil, nil, err
	}
	dir, err := os.MkdirTemp("", "tongbu-chromium-")
	if err != nil {
		return nil, nil, err
	}
	args := append([]string{"netns", "exec", ns.Name, exe}, flags...)
	args = append(args, "--user-data-dir="+dir, "--remote-debugging-port=0", "about:blank")
	cmd := exec.Command("ip", args...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true} // Chromium's helpers go with it
	stderr, err := cmd.StderrPipe()
	if err != nil {
		os.RemoveAll(dir)
		return nil, nil, err
	}
	if err := cmd.Start(); err != nil {
		os.RemoveAll(dir)
		return nil, nil, fmt.Errorf("browser: starting %s in %s: %w", exe, ns.Name, err)
	}
	var ln net.Listener
	stop := func() {
		if ln != nil {
			ln.Close()
		}
		syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		cmd.Wait()
		removeProfile(dir)
	}
	ws := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			if u, ok := strings.CutPrefix(sc.Text(), "DevTools listening on "); ok {
				ws <- u
			}
		}
		io.Copy(io.Discard, stderr)
	}()
	var wsURL string
	select {
	case wsURL = <-ws:
	case <-time.After(30 * time.Second):
		stop()
		return nil, nil, fmt.Errorf("browser: %s in %s printed no DevTools address", exe, ns.Name)
	}
	// ws://127.0.0.1:PORT/devtools/browser/ID, in the namespace.
	rest, _ := strings.CutPrefix(wsURL, "ws://")
	inner, path, _ := strings.Cut(rest, "/")
	if ln, err = net.Listen("tcp", "127.0.0.1:0"); err != nil {
		stop()
		return nil, nil, err
	}
	go proxy(ln, ns, inner)
	actx, cancelAlloc := chromedp.NewRemoteAllocator(ctx, "ws://"+ln.Addr().String()+"/"+path)
	tctx, cancelTab := chromedp.NewContext(actx)
	if err := chromedp.Run(tctx); err != nil {
		cancelTab()
		cancelAlloc()
		stop()
		return nil, nil, fmt.Errorf("browser: connecting to %s in %s: %w", exe, ns.Name, err)
	}
	return tctx, func() { cancelTab(); cancelAlloc(); stop() }, nil
}

// proxy forwards each connection to ln to addr inside ns.
func proxy(ln net.Listener, ns *netns.NS, addr string) {
	for {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		var in net.Conn
		if err := ns.Do(func() (err error) { in, err = net.Dial("tcp", addr); return err }); err != nil {
			c.Close()
			continue
		}
		go func() { io.Copy(in, c); in.Close() }()
		go func() { io.Copy(c, in); c.Close() }()
	}
}
