package interest

import (
	"bytes"
	"testing"
	"testing/synctest"
	"time"
)

// TestOnAction: the game hears every jump, skill and custom command a
// player's client sends that the world accepts, with its frame, and can
// resolve it on the spot (here a strike takes life from its target, which
// the other players then see); a skill at a target outside the player's
// range, a malformed packet and the server's own actions do not reach it.
func TestOnAction(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newHarness(t, harnessOptions{cfg: testConfig(), players: 3, npcs: 400, seed: 9})
		var got []Action
		h.w.OnAction(func(a Action) {
			a.Data = bytes.Clone(a.Data)
			got = append(got, a)
			if a.Kind == ActionSkill && a.Target != 0 {
				if err := h.w.Update(a.Target, func(lg *Logic) { lg.Life -= 30; lg.Combat = true }); err != nil {
					t.Error(err)
				}
			}
		})
		h.run(3*time.Second, false)
		// The NPCs stop here, and the one struck is one standing still,
		// so that it stays in the striker's range (player 0 stands too)
		// for the others to see the hit.
		h.npcsStill = true
		p := h.players[0]
		var near, far ID
		for _, id := range h.npcs {
			lg, _ := h.w.Logic(id)
			switch {
			case near == 0 && h.w.InRange(p.id, id) && !lg.Moving():
				near = id
			case far == 0 && !h.w.InRange(p.id, id):
				far = id
			}
		}
		if near == 0 || far == 0 {
			t.Fatalf("no NPC in range (%d) or out of range (%d) of player %d", near, far, p.id)
		}
		for _, err := range []error{p.c.Jump(), p.c.Skill(7, near), p.c.Custom(3, []byte("hi")), p.c.Skill(8, 0)} {
			if err != nil {
				t.Fatal(err)
			}
		}
		if err := h.w.Jump(h.players[1].id); err != nil { // the server's own: not an uplink action
			t.Fatal(err)
		}
		h.run(time.Second, false)
		want := []Action{
			{Player: p.id, Kind: ActionJump},
			{Player: p.id, Kind: ActionSkill, Skill: 7, Target: near},
			{Player: p.id, Kind: ActionCustom, Tag: 3, Data: []byte("hi")},
			{Player: p.id, Kind: ActionSkill, Skill: 8},
		}
		if len(got) != len(want) {
			t.Fatalf("actions %+v, want %+v", got, want)
		}
		for i, a := range got {
			w := want[i]
			if a.Player != w.Player || a.Kind != w.Kind || a.Skill != w.Skill || a.Target != w.Target || a.Tag != w.Tag || !bytes.Equal(a.Data, w.Data) {
				t.Errorf("action %d: %+v, want %+v", i, a, w)
			}
			if a.Frame <= 0 || a.Frame > h.w.Frame() {
				t.Errorf("action %d at frame %d, world at %d", i, a.Frame, h.w.Frame())
			}
		}
		if lg, _ := h.w.Logic(near); lg.Life != 70 || !lg.Combat {
			t.Errorf("the struck NPC: %+v, want 70 life and in combat", lg)
		}
		// The others in range see the hit, by state sync.
		h.run(3*time.Second, false)
		seen := 0
		for _, o := range h.players {
			if v, ok := o.c.Entity(near); ok && h.w.InRange(o.id, near) {
				seen++
				if v.Logic.Life != 70 {
					t.Errorf("player %d sees the struck NPC with %d life, want 70", o.id, v.Logic.Life)
				}
			}
		}
		if seen == 0 {
			t.Error("no client knows the struck NPC")
		}

		// Out of range: refused, and the game never hears of it.
		got = got[:0]
		if err := p.c.Skill(7, far); err != nil {
			t.Fatal(err)
		}
		h.run(time.Second, false)
		if len(got) != 0 {
			t.Errorf("a skill at a target out of range reached the game: %+v", got)
		}
		if err := h.w.Deliver(p.id, []byte{0xff, 0xff, 0xff}); err == nil {
			t.Error("a malformed packet was accepted")
		}
		if len(got) != 0 {
			t.Errorf("a malformed packet reached the game: %+v", got)
		}
		h.w.OnAction(nil)
		if err := p.c.Jump(); err != nil {
			t.Fatal(err)
		}
		h.run(time.Second, false)
		if len(got) != 0 {
			t.Errorf("the hook, removed, still ran: %+v", got)
		}
	})
}

// TestOnActionAfterPacket: the hook hears a packet's actions after the
// world has applied the whole packet, so a hook that despawns the sender
// (and a spawn that takes its ID again) leaves no later command of that
// packet running into a dead entity; the world ticks on.
func TestOnActionAfterPacket(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newHarness(t, harnessOptions{cfg: testConfig(), players: 2, npcs: 50, seed: 4})
		h.run(2*time.Second, false)
		p := h.players[0]
		heard := 0
		me, _ := p.c.Self()
		dest := Vec{X: me.Pos.X + 64, Y: me.Pos.Y}
		h.w.OnAction(func(a Action) {
			heard++
			lg, ok := h.w.Logic(a.Player)
			if !ok {
				t.Fatal("the hook: the sender is gone before it heard its action")
			}
			if lg.Dest != dest {
				t.Errorf("the hook heard the jump before the packet's move was applied: dest %v, want %v", lg.Dest, dest)
			}
			if err := h.w.Despawn(a.Player); err != nil {
				t.Fatal(err)
			}
			if _, err := h.w.Spawn(NPC, Logic{Pos: lg.Pos, Dest: lg.Pos, Life: 100}, Display{}); err != nil {
				t.Fatal(err)
			}
		})
		if err := p.c.Jump(); err != nil {
			t.Fatal(err)
		}
		if err := p.c.Move(dest, 8); err != nil { // in the same packet
			t.Fatal(err)
		}
		h.run(2*time.Second, false)
		if heard != 1 {
			t.Errorf("the hook heard %d actions, want the jump", heard)
		}
	})
}

// TestOnActionRemovesItself: a hook that removes itself while a packet's
// actions are being heard hears no more of them, and nothing panics.
func TestOnActionRemovesItself(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newHarness(t, harnessOptions{cfg: testConfig(), players: 1, npcs: 10, seed: 5})
		h.run(2*time.Second, false)
		p := h.players[0]
		heard := 0
		h.w.OnAction(func(Action) {
			heard++
			h.w.OnAction(nil)
		})
		if err := p.c.Jump(); err != nil {
			t.Fatal(err)
		}
		if err := p.c.Custom(1, []byte("x")); err != nil { // in the same packet
			t.Fatal(err)
		}
		h.run(time.Second, false)
		if heard != 1 {
			t.Errorf("the hook heard %d actions, want 1", heard)
		}
	})
}
