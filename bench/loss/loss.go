//go:build !js

package loss

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"time"

	"github.com/tongbu/tongbu/bench/internal/harness"
	"github.com/tongbu/tongbu/lockstep"
	"github.com/tongbu/tongbu/lockstep/locksteptest"
	"github.com/tongbu/tongbu/transport/memnet"
	"github.com/tongbu/tongbu/transport/udpimpair"
)

func init() {
	harness.Register("loss",
		"a lockstep match of 10 players at 15 Hz for 20 simulated minutes under packet loss",
		benchLoss)
}

// set reports whether a flag was given.
func set(fs *flag.FlagSet, name string) bool {
	found := false
	fs.Visit(func(f *flag.Flag) { found = found || f.Name == name })
	return found
}

func benchLoss(args []string, out io.Writer) error {
	fs := flag.NewFlagSet("loss", flag.ContinueOnError)
	loss := fs.Float64("loss", 0.2, "packet loss, each way")
	burst := fs.Float64("burst", 1, "mean length of a loss burst in packets (1: independent loss)")
	minutes := fs.Float64("minutes", 20, "simulated match length")
	latency := fs.Duration("latency", 40*time.Millisecond, "one-way latency")
	jitter := fs.Duration("jitter", 10*time.Millisecond, "one-way jitter (uniform)")
	seed := fs.Uint64("seed", 1, "random seed")
	via := fs.String("transport", "mem", "mem: simulated, 10 players; webrtc: real WebRTC on loopback through a UDP impairment relay, both stacks; "+
		"webrtc-tcp: the lean stack over UDP and over ICE-TCP, clients in a network namespace that loses -loss of the packets (root, nftables)")
	players := fs.Int("players", 2, "players, with -transport webrtc")
	seconds := fs.Float64("seconds", 120, "match length, with -transport webrtc")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *loss < 0 || *loss >= 1 || *burst < 1 || *minutes <= 0 {
		return errors.New("want 0 <= -loss < 1, -burst >= 1, -minutes > 0")
	}
	if *via == "webrtc-tcp" {
		return benchLossTCP(out, *players, time.Duration(*seconds*float64(time.Second)), *loss)
	}
	if *via == "webrtc" {
		if !set(fs, "latency") {
			*latency = 50 * time.Millisecond
		}
		if !set(fs, "jitter") {
			*jitter = 50 * time.Millisecond
		}
		l := udpimpair.Link{Loss: *loss, Burst: *burst, Delay: *latency, Jitter: *jitter}
		return benchLossWebRTC(out, *players, time.Duration(*seconds*float64(time.Second)), l, l)
	} else if *via != "mem" {
		return fmt.Errorf("-transport %q: want mem, webrtc or webrtc-tcp", *via)
	}
	link := memnet.LinkConfig{Latency: *latency, Jitter: *jitter}
	if *burst > 1 && *loss > 0 {
		// Gilbert-Elliott with a lossless good state and a lossy bad one:
		// mean burst B, mean loss P.
		b2g := 1 / *burst
		link.Burst = &memnet.GilbertElliott{BadToGood: b2g, GoodToBad: *loss * b2g / (1 - *loss), LossBad: 1}
	} else {
		link.Loss = *loss
	}
	d := time.Duration(*minutes * float64(time.Minute))
	cfg := lockstep.Config{Players: 10, Hz: 15}
	t0 := time.Now()
	r, err := locksteptest.Run(locksteptest.Options{Config: cfg, Duration: d, Up: link, Down: link, Seed: *seed})
	if err != nil {
		return err
	}
	secs := d.Seconds()
	down := float64(r.DownBytes) / secs / 10
	up := float64(r.UpBytes) / secs / 10
	late := float64(r.LateDrops) / float64(max(r.Inputs, 1))
	fmt.Fprintf(out, "loss: 10 players, 15 Hz, %g simulated minutes, %.0f%% loss each way (bursts of %g), %v +- %v one way\n", *minutes, 100**loss, *burst, *latency, *jitter)
	fmt.Fprintf(out, "(simulated in %v)\n\n", time.Since(t0).Round(time.Millisecond))
	fmt.Fprintf(out, "frames cut                 %d\n", r.Frames)
	fmt.Fprintf(out, "delivered to every client  %.4f   identical sequences: %v\n", r.Delivered, r.Identical)
	fmt.Fprintf(out, "unstalled play             %.4f   (%d pauses over all clients)\n", r.Unstalled, r.Stalls)
	fmt.Fprintf(out, "late inputs dropped        %.4f   (%d of %d)\n", late, r.LateDrops, r.Inputs)
	fmt.Fprintf(out, "down per client            %.0f bytes/s (lockstep payload; %d retransmitted frames; redundancy %.1f)\n", down, r.Retransmits, r.Redundancy)
	fmt.Fprintf(out, "up per client              %.0f bytes/s\n", up)
	fmt.Fprintf(out, "input lead                 %.0f ms\n", r.MeanLeadMs)
	if !r.Identical {
		return errors.New("clients played different frame sequences")
	}
	fmt.Fprintln(out, harness.Result("loss",
		"loss", *loss, "burst", *burst,
		"delivered", fmt.Sprintf("%.4f", r.Delivered),
		"unstalled", fmt.Sprintf("%.4f", r.Unstalled),
		"late_drops", fmt.Sprintf("%.4f", late),
		"down_bps", int(down), "up_bps", int(up),
	))
	return nil
}
