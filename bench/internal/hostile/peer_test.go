//go:build !js

package hostile

import (
	"context"
	"os"
	"testing"
	"time"

	"github.com/tongbu/tongbu/bench/internal/harness"
	"github.com/tongbu/tongbu/engine"
	"github.com/tongbu/tongbu/lockstep"
)

// TestPeer: the hostile peer connects to a real server as a player,
// stays connected, and its held-fragment attack reaches the server's
// reassembly (which holds next to nothing of it); as root, a check forged
// from its own address is answered and one forged from another player's
// address is refused.
func TestPeer(t *testing.T) {
	srv, err := engine.NewServer(engine.Config{Secret: []byte("hostile-test-secret-0123"), UDPAddr: "127.0.0.1:0"})
	if err != nil {
		t.Fatal(err)
	}
	url, stop, err := harness.ServeEngine(srv)
	if err != nil {
		t.Fatal(err)
	}
	defer stop()
	if _, err := srv.CreateRoom("r", lockstep.Config{Players: 4, Hz: 30}); err != nil {
		t.Fatal(err)
	}
	dial := func(player string) *Peer {
		tk, _ := srv.Ticket(player, "r", engine.RolePlayer, time.Minute)
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		p, err := Dial(ctx, url, tk)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(p.Close)
		return p
	}
	p := dial("mallory")
	r, _ := srv.Room("r")
	for deadline := time.Now().Add(5 * time.Second); r.Connected() < 1; time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the hostile peer never joined the room")
		}
	}
	before := srv.DataPath().Datagrams
	for i := range 1001 {
		var pkt []byte
		if i == 1000 {
			pkt = p.Packet(p.Forward())
		} else {
			var cs [][]byte
			for range 60 {
				cs = append(cs, p.Data(4|2, 0, 53, []byte{0x42}))
			}
			pkt = p.Packet(cs...)
		}
		if err := p.Send(pkt); err != nil {
			t.Fatal(err)
		}
		if i%30 == 29 {
			time.Sleep(10 * time.Millisecond) // under the flood limit
		}
	}
	time.Sleep(200 * time.Millisecond)
	st := srv.DataPath()
	t.Logf("%d datagrams handled; held at most %d chunks; worst datagram %v", st.Datagrams-before, st.HeldChunksMax, st.MaxDatagram)
	if st.Datagrams-before < 1000 {
		t.Errorf("the server handled %d of the attack's 1001 datagrams", st.Datagrams-before)
	}
	if st.HeldChunksMax > 4 {
		t.Errorf("the server held %d chunks", st.HeldChunksMax)
	}
	if r.Connected() != 1 {
		t.Errorf("the hostile peer is no longer connected")
	}

	if os.Geteuid() != 0 {
		t.Log("not root: no forged sources")
		return
	}
	sp, err := NewSpoofer()
	if err != nil {
		t.Fatal(err)
	}
	defer sp.Close()
	other := dial("bob")
	for deadline := time.Now().Add(5 * time.Second); r.Connected() < 2; time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the second peer never joined")
		}
	}
	refused := srv.DataPath().ChecksRefused
	for range 10 {
		if err := sp.Send(other.Local, p.Server(), p.Check()); err != nil {
			t.Fatal(err)
		}
	}
	time.Sleep(200 * time.Millisecond)
	if got := srv.DataPath().ChecksRefused - refused; got != 10 {
		t.Errorf("%d of 10 checks forged from another player's address refused", got)
	}
}
