//go:build linux

package loss

import (
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/tongbu/tongbu/bench/internal/harness"
	"github.com/tongbu/tongbu/internal/netns"
	"github.com/tongbu/tongbu/transport"
)

// benchLossTCP plays the lockstep match of -transport webrtc twice on the
// lean stack, over UDP and then over ICE-TCP, with the native clients in
// a network namespace whose firewall drops loss of the packets each way
// at random, UDP datagrams and TCP segments alike: what a player behind
// a UDP block pays for TCP on a lossy path. Kernel netem is not on this
// machine, so the path adds no delay: the veth's round trip is tens of
// microseconds, and what TCP costs is its retransmission timer (200 ms at
// the least on Linux) and the head-of-line blocking of everything behind
// a lost segment, the unreliable channel's messages included.
func benchLossTCP(out io.Writer, players int, d time.Duration, loss float64) error {
	ns, err := netns.New(netns.Options{Loss: loss})
	if err != nil {
		return fmt.Errorf("%w (the TCP scenario needs a network namespace: run as root with iproute2 and nftables)", err)
	}
	defer ns.Close()
	fmt.Fprintf(out, "loss over WebRTC, UDP and TCP: %d native players in a network namespace, 15 Hz, %v, %.0f%% of the packets lost each way at random (no added delay)\n\n",
		players, d, 100*loss)
	var runs []lossRun
	for _, network := range []string{"udp", "tcp"} {
		r, err := lossMatch(lossPath{stack: transport.StackLean, host: ns.Host.String(), network: network, dial: ns.Do}, players, d)
		if err != nil {
			return fmt.Errorf("%s: %w", network, err)
		}
		runs = append(runs, r)
		fmt.Fprintf(out, "%-5s delivered %.4f identical %v  unstalled %.4f  rtt mean %.0f ms p99 %.0f ms\n",
			network, r.delivered, r.identical, r.unstalled, r.rttMean, r.rttP99)
		for _, d := range r.dropped {
			fmt.Fprintf(out, "      dropped: %s\n", d)
		}
	}
	udp, tcp := runs[0], runs[1]
	fmt.Fprintln(out, "\nrtt is the clients' transport estimate (SCTP's smoothed RTT, over TCP's retransmissions), sampled every 100 ms.")
	fmt.Fprintln(out, harness.Result("loss",
		"transport", "webrtc-tcp",
		"loss", loss, "players", players, "seconds", d.Seconds(),
		"delivered", fmt.Sprintf("%.4f", tcp.delivered),
		"unstalled", fmt.Sprintf("%.4f", tcp.unstalled),
		"rtt_mean_ms", fmt.Sprintf("%.0f", tcp.rttMean),
		"rtt_p99_ms", fmt.Sprintf("%.0f", tcp.rttP99),
		"udp_delivered", fmt.Sprintf("%.4f", udp.delivered),
		"udp_unstalled", fmt.Sprintf("%.4f", udp.unstalled),
		"udp_rtt_mean_ms", fmt.Sprintf("%.0f", udp.rttMean),
		"udp_rtt_p99_ms", fmt.Sprintf("%.0f", udp.rttP99),
	))
	if !udp.identical || !tcp.identical {
		return errors.New("clients played different frame sequences")
	}
	for _, r := range runs {
		if len(r.dropped) > 0 {
			return errors.New(r.dropped[0])
		}
	}
	return nil
}
