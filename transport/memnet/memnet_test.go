package memnet

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/tongbu/tongbu/transport"
)

// pump sends n numbered messages from a to b, one every interval, and
// returns the sequence numbers in the order b received them.
func pump(t *testing.T, a, b *Conn, ch transport.Channel, n int, interval time.Duration) []uint32 {
	t.Helper()
	var got []uint32
	done := make(chan struct{})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		defer close(done)
		for {
			m, err := b.Receive(ctx)
			if err != nil {
				return
			}
			if m.Channel != ch {
				t.Errorf("message on channel %v, sent on %v", m.Channel, ch)
			}
			got = append(got, binary.LittleEndian.Uint32(m.Data))
		}
	}()
	msg := make([]byte, 100)
	for i := range n {
		binary.LittleEndian.PutUint32(msg, uint32(i))
		var err error
		if ch == transport.Reliable {
			err = a.SendReliable(msg)
		} else {
			err = a.SendUnreliable(msg)
		}
		if err != nil && !errors.Is(err, transport.ErrDropped) {
			t.Fatalf("send %d: %v", i, err)
		}
		time.Sleep(interval)
	}
	time.Sleep(10 * time.Second) // let everything in flight land
	synctest.Wait()
	cancel()
	<-done
	return got
}

func TestPerfectLink(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c, s := New(1).Pipe(LinkConfig{}, LinkConfig{})
		defer c.Close()
		got := pump(t, c, s, transport.Reliable, 100, time.Millisecond)
		for i, v := range got {
			if v != uint32(i) {
				t.Fatalf("message %d is %d", i, v)
			}
		}
		if len(got) != 100 {
			t.Fatalf("got %d messages", len(got))
		}
		if st := c.Stats(); st.SentMessages != 100 || st.SentBytes != 10000 {
			t.Fatalf("stats %+v", st)
		}
	})
}

func TestLossLatencyReorderMatchConfig(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		cfg := LinkConfig{Latency: 40 * time.Millisecond, Jitter: 20 * time.Millisecond, Loss: 0.10, Reorder: 0.05, ReorderDelay: 30 * time.Millisecond}
		c, s := New(7).Pipe(cfg, LinkConfig{})
		defer c.Close()
		const n = 20000
		got := pump(t, c, s, transport.Unreliable, n, 5*time.Millisecond)
		st := c.LinkStats()
		loss := 1 - float64(len(got))/n
		if math.Abs(loss-0.10) > 0.01 {
			t.Errorf("measured loss %.4f, configured 0.10", loss)
		}
		// Mean one-way delay: latency + uniform jitter mean + reorder share.
		want := 40e-3 + 10e-3 + 0.05*30e-3
		mean := st.DelaySum.Seconds() / float64(st.Delivered)
		if math.Abs(mean-want)/want > 0.03 {
			t.Errorf("mean delay %.4fs, want %.4fs", mean, want)
		}
		reordered := float64(st.Reordered) / float64(st.Sent-st.Lost) // decided for messages not lost
		if math.Abs(reordered-0.05) > 0.006 {
			t.Errorf("reorder rate %.4f, configured 0.05", reordered)
		}
		inversions := 0
		for i := 1; i < len(got); i++ {
			if got[i] < got[i-1] {
				inversions++
			}
		}
		if inversions == 0 {
			t.Error("jitter and reordering produced no out-of-order arrival")
		}
	})
}

func TestBurstLoss(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ge := GilbertElliott{GoodToBad: 0.02, BadToGood: 0.25, LossGood: 0, LossBad: 1}
		c, s := New(3).Pipe(LinkConfig{Latency: 10 * time.Millisecond, Burst: &ge}, LinkConfig{})
		defer c.Close()
		const n = 40000
		got := pump(t, c, s, transport.Unreliable, n, time.Millisecond)
		loss := 1 - float64(len(got))/n
		if want := ge.MeanLoss(); math.Abs(loss-want) > 0.015 {
			t.Errorf("loss %.4f, chain's mean %.4f", loss, want)
		}
		// Losses come in runs: the mean run is 1/BadToGood = 4 messages.
		runs, lost := 0, 0
		next := uint32(0)
		for _, v := range got {
			if v > next {
				runs++
				lost += int(v - next)
			}
			next = v + 1
		}
		if mean := float64(lost) / float64(runs); mean < 3 || mean > 5 {
			t.Errorf("mean loss run %.2f messages, want about 4", mean)
		}
	})
}

func TestSameSeedSameTrace(t *testing.T) {
	run := func(seed uint64) []TraceEvent {
		var tr Trace
		synctest.Test(t, func(t *testing.T) {
			cfg := LinkConfig{Latency: 30 * time.Millisecond, Jitter: 15 * time.Millisecond, Dist: Pareto, Loss: 0.05, Duplicate: 0.02, Reorder: 0.02, Record: &tr}
			c, s := New(seed).Pipe(cfg, LinkConfig{})
			defer c.Close()
			pump(t, c, s, transport.Unreliable, 2000, 2*time.Millisecond)
		})
		return tr.Events()
	}
	a, b, other := run(42), run(42), run(43)
	if len(a) != 2000 || !equalEvents(a, b) {
		t.Fatal("the same seed gave different traces")
	}
	if equalEvents(a, other) {
		t.Fatal("different seeds gave the same trace")
	}
}

func equalEvents(a, b []TraceEvent) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func TestReplayReproducesArrivals(t *testing.T) {
	var tr Trace
	var first []uint32
	synctest.Test(t, func(t *testing.T) {
		cfg := LinkConfig{Latency: 20 * time.Millisecond, Jitter: 40 * time.Millisecond, Dist: Normal, Loss: 0.1, Record: &tr}
		c, s := New(9).Pipe(cfg, LinkConfig{})
		defer c.Close()
		first = pump(t, c, s, transport.Unreliable, 1000, time.Millisecond)
	})
	// Save and load the trace, then replay it on a network with another seed.
	var buf bytes.Buffer
	if _, err := tr.WriteTo(&buf); err != nil {
		t.Fatal(err)
	}
	loaded, err := ReadTrace(&buf)
	if err != nil {
		t.Fatal(err)
	}
	synctest.Test(t, func(t *testing.T) {
		c, s := New(1234).Pipe(LinkConfig{Replay: loaded}, LinkConfig{})
		defer c.Close()
		second := pump(t, c, s, transport.Unreliable, 1000, time.Millisecond)
		if len(second) != len(first) {
			t.Fatalf("replay delivered %d, recording %d", len(second), len(first))
		}
		for i := range first {
			if first[i] != second[i] {
				t.Fatalf("arrival %d: replay %d, recording %d", i, second[i], first[i])
			}
		}
	})
}

func TestReliableOrderedUnderLoss(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c, s := New(5).Pipe(LinkConfig{Latency: 50 * time.Millisecond, Jitter: 30 * time.Millisecond, Loss: 0.3}, LinkConfig{})
		defer c.Close()
		got := pump(t, c, s, transport.Reliable, 1000, time.Millisecond)
		if len(got) != 1000 {
			t.Fatalf("reliable channel delivered %d of 1000", len(got))
		}
		for i, v := range got {
			if v != uint32(i) {
				t.Fatalf("reliable message %d arrived as %d", i, v)
			}
		}
		if c.LinkStats().Retransmit == 0 {
			t.Fatal("30% loss caused no retransmission delay")
		}
	})
}

func TestBandwidthCapDropsUnreliable(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		// 10 KB/s; 100-byte messages every millisecond is 100 KB/s offered.
		c, s := New(1).Pipe(LinkConfig{Bandwidth: 10_000}, LinkConfig{})
		defer c.Close()
		got := pump(t, c, s, transport.Unreliable, 5000, time.Millisecond)
		dropped := c.Stats().DroppedUnreliable
		if dropped == 0 || int(dropped)+len(got) != 5000 {
			t.Fatalf("dropped %d, delivered %d, of 5000", dropped, len(got))
		}
		// 5 s of sending at 10 KB/s, plus the 100 ms queue: about 501 messages.
		if len(got) < 480 || len(got) > 520 {
			t.Fatalf("delivered %d messages through a 10 KB/s link in 5 s", len(got))
		}
	})
}

func TestMemConnErrorsAndClose(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c, s := New(1).Pipe(LinkConfig{}, LinkConfig{})
		if err := c.SendUnreliable(make([]byte, transport.DefaultMaxUnreliable+1)); !errors.Is(err, transport.ErrTooLarge) {
			t.Fatalf("oversized: %v", err)
		}
		if err := c.SendReliable(make([]byte, 64<<10)); err != nil {
			t.Fatalf("large reliable message: %v", err)
		}
		received := make(chan error, 1)
		go func() {
			_, err := s.Receive(context.Background())
			received <- err
			_, err = s.Receive(context.Background())
			received <- err
		}()
		synctest.Wait()
		if err := <-received; err != nil {
			t.Fatal(err)
		}
		c.Close()
		if err := <-received; !errors.Is(err, transport.ErrClosed) {
			t.Fatalf("receive after close: %v", err)
		}
		select {
		case <-s.Done():
		default:
			t.Fatal("closing one end did not close the other")
		}
		if err := s.SendReliable([]byte("x")); !errors.Is(err, transport.ErrClosed) {
			t.Fatalf("send after close: %v", err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		c2, _ := New(2).Pipe(LinkConfig{}, LinkConfig{})
		defer c2.Close()
		if _, err := c2.Receive(ctx); !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("receive with deadline: %v", err)
		}
	})
}

func TestLinkConfigValidate(t *testing.T) {
	bad := []LinkConfig{
		{Loss: 1.5}, {Duplicate: -0.1}, {Latency: -1}, {Bandwidth: -5},
		{Burst: &GilbertElliott{GoodToBad: 2}}, {Loss: math.NaN()},
	}
	for _, c := range bad {
		if c.Validate() == nil {
			t.Errorf("%+v validated", c)
		}
	}
	if (LinkConfig{Loss: 1, Latency: time.Second}).Validate() != nil {
		t.Error("a valid config failed")
	}
}

func TestReadTraceErrors(t *testing.T) {
	for _, in := range []string{"abc", "-5", "10 lost bogus", "99999999999999"} {
		if _, err := ReadTrace(strings.NewReader(in)); err == nil {
			t.Errorf("%q: no error", in)
		}
	}
	tr, err := ReadTrace(strings.NewReader("# comment\n\n1500 lost\n2000 dup\n"))
	if err != nil {
		t.Fatal(err)
	}
	want := []TraceEvent{{Delay: 1500 * time.Microsecond, Lost: true}, {Delay: 2 * time.Millisecond, Dup: true}}
	if !equalEvents(tr.Events(), want) {
		t.Fatalf("events %+v", tr.Events())
	}
}

func TestTryReceive(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c, s := New(1).Pipe(LinkConfig{Latency: 10 * time.Millisecond}, LinkConfig{})
		defer c.Close()
		if _, ok := s.TryReceive(); ok {
			t.Fatal("a message before anything was sent")
		}
		for i := range 3 {
			if err := c.SendUnreliable([]byte{byte(i)}); err != nil {
				t.Fatal(err)
			}
		}
		if _, ok := s.TryReceive(); ok {
			t.Fatal("a message before the link's latency passed")
		}
		time.Sleep(10 * time.Millisecond)
		synctest.Wait()
		for i := range 3 {
			m, ok := s.TryReceive()
			if !ok || m.Data[0] != byte(i) {
				t.Fatalf("message %d: %v %v", i, m.Data, ok)
			}
		}
		if _, ok := s.TryReceive(); ok {
			t.Fatal("more messages than were sent")
		}
		if st := s.Stats(); st.RecvMessages != 3 {
			t.Fatalf("received %d", st.RecvMessages)
		}
	})
}

// ExampleNetwork emulates a lossy link. The same seed loses the same
// messages every time; in a testing/synctest bubble the wait would take no
// time at all.
func ExampleNetwork() {
	net := New(42)
	client, server := net.Pipe(LinkConfig{Latency: 5 * time.Millisecond, Loss: 0.5}, LinkConfig{})
	defer client.Close()
	for i := range 100 {
		client.SendUnreliable([]byte{byte(i)})
	}
	time.Sleep(50 * time.Millisecond)
	n := 0
	for {
		if _, ok := server.TryReceive(); !ok {
			break
		}
		n++
	}
	fmt.Printf("%d of 100 arrived; the link lost %d\n", n, client.LinkStats().Lost)
	// Output: 54 of 100 arrived; the link lost 46
}

// TestClosedSendIsBare: a send on a closed connection returns the bare
// transport.ErrClosed (no stack: sends are on the data path).
func TestClosedSendIsBare(t *testing.T) {
	c, _ := New(1).Pipe(LinkConfig{}, LinkConfig{})
	c.Close()
	if err := c.SendReliable([]byte{1}); err != transport.ErrClosed {
		t.Fatalf("a send on a closed connection: %v, want the bare ErrClosed", err)
	}
}

// FuzzReadTrace reads arbitrary trace files: nothing panics, and what
// reads back writes out and reads again to the same events.
func FuzzReadTrace(f *testing.F) {
	f.Add([]byte("# a trace\n1500\n2000 lost\n\n300 dup\n"))
	f.Add([]byte("99999999999 lost dup\n"))
	f.Add([]byte("-1\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		tr, err := ReadTrace(bytes.NewReader(b))
		if err != nil {
			return
		}
		var out bytes.Buffer
		if _, err := tr.WriteTo(&out); err != nil {
			t.Fatal(err)
		}
		again, err := ReadTrace(&out)
		if err != nil || !equalEvents(tr.events, again.events) {
			t.Fatalf("%q read back as %v, %v", b, again, err)
		}
	})
}
