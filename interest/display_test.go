package interest

import (
	"testing"
	"time"
)

// direct hands the world's packets straight to one client.
type direct struct{ c *Client }

func (d *direct) SendUnreliable(_ ID, msg []byte) error { return d.c.Deliver(time.Unix(0, 0), msg) }
func (d *direct) SendReliable(id ID, msg []byte) error  { return d.SendUnreliable(id, msg) }

// TestDisplayVersions checks that display data is fetched once per
// version: a client holds the first version, and after SetDisplay it
// fetches and holds the second, whatever the world cached in between; a
// spawn that reuses a removed entity's ID is fetched afresh.
func TestDisplayVersions(t *testing.T) {
	cfg := Config{Width: 8, Height: 8}
	start := time.Unix(0, 0)
	out := &direct{}
	w, err := NewWorld(cfg, start, out)
	if err != nil {
		t.Fatal(err)
	}
	player, _ := w.Spawn(Player, Logic{Pos: Vec{1000, 1000}, Life: 100}, Display{Name: "you"})
	npc, _ := w.Spawn(NPC, Logic{Pos: Vec{1500, 900}, Life: 100}, Display{Name: "wolf", Appearance: 1})
	if err := w.Join(player); err != nil {
		t.Fatal(err)
	}
	out.c, _ = NewClient(cfg, player)
	frame := 0
	run := func(frames int) {
		for range frames {
			frame++
			now := start.Add(time.Duration(frame) * w.Config().Period())
			w.Tick(now)
			out.c.Advance(now)
			if pkt := out.c.Packet(now); pkt != nil {
				if err := w.Deliver(player, pkt); err != nil {
					t.Fatalf("frame %d: %v", frame, err)
				}
			}
		}
	}
	want := func(id ID, name string, app uint32) {
		t.Helper()
		v, ok := out.c.Entity(id)
		if !ok || !v.HasDisplay || v.Display.Name != name || v.Display.Appearance != app {
			t.Fatalf("entity %d: known %v, display %+v (has %v), want %q/%d", id, ok, v.Display, v.HasDisplay, name, app)
		}
	}
	run(8)
	want(npc, "wolf", 1)
	before := w.Stats().ReliableOut
	run(32)
	if w.Stats().ReliableOut != before {
		t.Errorf("display data sent again for a version the client holds: %d more bytes", w.Stats().ReliableOut-before)
	}
	if err := w.SetDisplay(npc, Display{Name: "dire wolf", Appearance: 2}); err != nil {
		t.Fatal(err)
	}
	run(w.Config().period(false, false, false) + 16) // the next state sync tells the new version
	want(npc, "dire wolf", 2)

	if err := w.Despawn(npc); err != nil {
		t.Fatal(err)
	}
	run(8)
	again, _ := w.Spawn(NPC, Logic{Pos: Vec{1200, 1100}, Life: 100}, Display{Name: "bear", Appearance: 3})
	if again != npc {
		t.Logf("the new NPC has ID %d, not the removed %d's", again, npc)
	}
	run(48) // forced sync, then display
	want(again, "bear", 3)
}
