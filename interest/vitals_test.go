package interest

import (
	"errors"
	"testing"
	"time"

	"github.com/tongbu/tongbu/codec"
)

// TestVitalsLen checks the vitals' encoding against SPEC 8 ("vitals")
// in the default configuration (MagicBits 8): the bits writeVitals takes
// for usual and unusual values of every field; that writeLogic reports
// where they end in logic data and they are those bits there, after the
// kind; that a state sync spliced from an entity's absolute encoding is
// the message written out in full; and that they read back.
func TestVitalsLen(t *testing.T) {
	cfg := Config{Width: 8, Height: 8}.WithDefaults()
	l := newLayout(cfg)
	w, err := NewWorld(cfg, time.Unix(0, 0), discard{})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		lg   Logic
		dver uint8
		bits int
	}{
		// usual: unusual 0, version nonzero 0.
		{Logic{Life: 100, Mana: 100}, 0, 1 + 1},
		// usual, version 5: unusual 0, version nonzero 1 and 8 bits.
		{Logic{Life: 100, Mana: 100}, 5, 1 + 1 + 8},
		// unusual 1; state 0 (1); combat (1); life 37 (1+7); mana and
		// rage usual (1 each); magic 0 (1); version 0 (1).
		{Logic{Life: 37, Mana: 100, Combat: true}, 0, 1 + 1 + 1 + 8 + 1 + 1 + 1 + 1},
		// unusual 1; state 9 (1+5); combat (1); life, mana, rage other
		// (1+7 each); magic (1+8); version 200 (1+8).
		{Logic{State: 9, Life: 0, Mana: 3, Rage: 100, Magic: 0xa5}, 200, 1 + 6 + 1 + 3*8 + 9 + 9},
		// unusual 1; state, combat, life, mana (1 each); rage 1 (1+7);
		// magic 0 (1); version 1 (1+8).
		{Logic{Life: 100, Mana: 100, Rage: 1}, 1, 1 + 4 + 8 + 1 + 9},
	} {
		var vw codec.Writer
		l.writeVitals(&vw, &tc.lg, tc.dver)
		if vw.Len() != tc.bits {
			t.Errorf("%+v version %d: writeVitals took %d bits, want %d", tc.lg, tc.dver, vw.Len(), tc.bits)
		}

		var lw codec.Writer
		lw.WriteBits(0b101, 3) // not at the writer's start
		lg := tc.lg
		lg.Pos, lg.Dest = Vec{1500, 900}, Vec{1600, 900}
		lg.Speed = 4
		if end := l.writeLogic(&lw, NPC, &lg, tc.dver, nil); end != logicKindBits+tc.bits {
			t.Errorf("%+v version %d: writeLogic's vitals end at %d, want %d", tc.lg, tc.dver, end, logicKindBits+tc.bits)
		}
		var spliced codec.Writer
		copyBits(&spliced, lw.Bytes(), 3+logicKindBits, 3+logicKindBits+tc.bits)
		if spliced.Len() != vw.Len() || string(spliced.Bytes()) != string(vw.Bytes()) {
			t.Errorf("%+v version %d: the vitals in logic data differ from writeVitals'", tc.lg, tc.dver)
		}

		id, err := w.Spawn(NPC, lg, Display{})
		if err != nil {
			t.Fatal(err)
		}
		e := w.ent(id)
		e.dver = tc.dver
		w.invalidate(e)
		w.absolute(e)
		if e.vitalsBits() != tc.bits {
			t.Errorf("%+v version %d: the absolute encoding's vitals take %d bits, want %d", tc.lg, tc.dver, e.vitalsBits(), tc.bits)
		}
		var msg, want codec.Writer
		w.writeVitalsMsg(&msg, e)
		writeTag(&want, tagVitals)
		l.writeID(&want, id)
		l.writeVitals(&want, &tc.lg, tc.dver)
		if msg.Len() != want.Len() || string(msg.Bytes()) != string(want.Bytes()) {
			t.Errorf("%+v version %d: spliced state sync %x (%d bits), written in full %x (%d bits)",
				tc.lg, tc.dver, msg.Bytes(), msg.Len(), want.Bytes(), want.Len())
		}

		var back Logic
		if dver := l.readVitals(codec.NewReader(vw.Bytes()), &back); dver != tc.dver ||
			back.State != tc.lg.State || back.Combat != tc.lg.Combat || back.Life != tc.lg.Life ||
			back.Mana != tc.lg.Mana || back.Rage != tc.lg.Rage || back.Magic != tc.lg.Magic {
			t.Errorf("read back %+v version %d, want %+v version %d", back, dver, tc.lg, tc.dver)
		}
	}
}

// TestVitalsMessage checks the state sync's message on the client: it
// changes a known entity's vitals and display version but not where it
// is or goes, and for an entity the client does not know it asks for the
// whole logic (discovery).
func TestVitalsMessage(t *testing.T) {
	cfg := Config{Width: 8, Height: 8}.WithDefaults()
	l := newLayout(cfg)
	c, _ := NewClient(cfg, 1)
	now := time.Unix(0, 0)
	wolf := Logic{Pos: Vec{1500, 900}, Dest: Vec{1600, 900}, Speed: 4, Life: 100, Mana: 100}
	seq := 0
	send := func(frame int, msgs func(w *codec.Writer)) {
		t.Helper()
		var w codec.Writer
		(&downHeader{seq: seq, full: true, frame: frame}).encode(&w)
		seq++
		msgs(&w)
		if err := c.Deliver(now, w.Bytes()); err != nil {
			t.Fatal(err)
		}
	}
	send(10, func(w *codec.Writer) {
		writeTag(w, tagLogic)
		l.writeID(w, 7)
		l.writeLogic(w, NPC, &wolf, 0, nil)
		w.WriteBits(0, epochBits) // the move number
	})
	hurt := wolf
	hurt.Life, hurt.Combat = 40, true
	send(10, func(w *codec.Writer) {
		writeTag(w, tagVitals)
		l.writeID(w, 7)
		l.writeVitals(w, &hurt, 2)
		writeTag(w, tagVitals)
		l.writeID(w, 8)
		l.writeVitals(w, &hurt, 0)
	})
	v, ok := c.Entity(7)
	if !ok {
		t.Fatal("the wolf is not known")
	}
	if v.Logic.Life != 40 || !v.Logic.Combat || v.Logic.Pos != wolf.Pos || v.Logic.Dest != wolf.Dest || v.Logic.Speed != wolf.Speed {
		t.Errorf("after a vitals message the wolf is %+v, want life 40 in combat at %v heading to %v", v.Logic, wolf.Pos, wolf.Dest)
	}
	if _, ok := c.Entity(8); ok {
		t.Error("a vitals message made an entity known without its position")
	}
	if _, asked := c.discover[8]; !asked {
		t.Error("a vitals message for an unknown entity did not ask for it")
	}
	if _, want := c.wantDisp[7]; !want {
		t.Error("a new display version did not ask for the display data")
	}
}

// TestShortFrames checks the world packet's frame: in full until the
// client acknowledges a packet, then its low bits unwrapped against the
// client's estimate; a short frame before any full one is dropped.
func TestShortFrames(t *testing.T) {
	cfg := Config{Width: 8, Height: 8}.WithDefaults()
	c, _ := NewClient(cfg, 1)
	now := time.Unix(0, 0)
	pkt := func(seq, frame int, full bool) []byte {
		var w codec.Writer
		(&downHeader{seq: seq, full: full, frame: frame}).encode(&w)
		return append([]byte(nil), w.Bytes()...)
	}
	if err := c.Deliver(now, pkt(0, 5000, false)); !errors.Is(err, ErrMalformed) {
		t.Fatalf("a short frame first: %v, want ErrMalformed", err)
	}
	if err := c.Deliver(now, pkt(1, 5000, true)); err != nil || c.Frame() != 5000 {
		t.Fatalf("a full frame: %v, frame %d, want 5000", err, c.Frame())
	}
	for _, f := range []int{5001, 5100, 5127, 5220} {
		if err := c.Deliver(now, pkt(2, f, false)); err != nil || c.Frame() != f {
			t.Fatalf("short frame %d: %v, client frame %d", f, err, c.Frame())
		}
	}
	// An older packet, reordered, keeps the client's frame.
	if err := c.Deliver(now, pkt(3, 5200, false)); err != nil || c.Frame() != 5220 {
		t.Fatalf("an older short frame: %v, client frame %d, want 5220", err, c.Frame())
	}
}

// TestForcedSyncSkipsTold checks that a region's forced sync leaves out an
// entity the client was sent whole after its range took the region in:
// here a wolf whose walk (begun before) carries it into the region, which
// the world announces. Without the rule the client gets the wolf twice.
func TestForcedSyncSkipsTold(t *testing.T) {
	rec := &recorder{}
	start := time.Unix(0, 0)
	w, err := NewWorld(testConfig(), start, rec)
	if err != nil {
		t.Fatal(err)
	}
	me, _ := w.Spawn(Player, Logic{Pos: Vec{5600, 5600}, Life: 100, Mana: 100}, Display{Name: "me"})
	if err := w.Join(me); err != nil {
		t.Fatal(err)
	}
	wolf, _ := w.Spawn(NPC, Logic{Pos: Vec{8292, 5600}, Life: 100, Mana: 100}, Display{Name: "wolf"})
	// The wolf walks west into region x=7, a walk broadcast before the
	// player steps east into region x=6: the player's range takes in
	// column 7 ten frames before the wolf gets there, and the player
	// stands, so the column's forced sync waits ForcedSync.
	if err := w.Move(wolf, Vec{8068, 5600}, 8); err != nil {
		t.Fatal(err)
	}
	for n := 1; n < 80; n++ {
		if n == 4 {
			if err := w.Place(me, Vec{6300, 5600}); err != nil {
				t.Fatal(err)
			}
			rec.msgs = nil
		}
		w.Tick(start.Add(time.Duration(n) * w.cfg.Period()))
	}
	whole := 0
	for _, b := range rec.msgs {
		var h downHeader
		if err := decodeDown(&w.lay, b, w.Frame(), &h, new(downMsg), func(m *downMsg) {
			if m.tag == tagLogic && m.id == wolf {
				whole++
			}
		}); err != nil {
			t.Fatal(err)
		}
	}
	if st := w.Stats(); st.Enters == 0 {
		t.Fatal("the wolf's crossing was not announced: the test's geometry is off")
	}
	if whole != 1 {
		t.Errorf("the client was sent the wolf whole %d times, want once (its announcement)", whole)
	}
}
