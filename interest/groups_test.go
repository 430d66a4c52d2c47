package interest

import (
	"errors"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/tongbu/tongbu/codec"
	"github.com/tongbu/tongbu/internal/vectorfile"
)

// groupsConfig declares the seed's kinds of field groups: one sent on
// change (a guild and rank), one at most once a second (buffs, signed
// stacks), one only on request (an inspect window's gear score).
func groupsConfig() Config {
	c := testConfig()
	c.Groups = []Group{
		{Name: "guild", Fields: []Field{{Name: "id", Bits: 24}, {Name: "rank", Bits: 4}}},
		{Name: "buffs", Every: time.Second, Fields: []Field{{Name: "mask", Bits: 32}, {Name: "stacks", Bits: 8, Signed: true}}},
		{Name: "inspect", Request: true, Fields: []Field{{Name: "gear", Bits: 16}}},
	}
	return c
}

// groupScene is a world with groupsConfig, a player with its client fed
// straight from the world, an NPC beside it and another far away.
type groupScene struct {
	t         *testing.T
	w         *World
	out       inbox
	me, near  ID
	far       ID
	cl        *Client
	now       time.Time
	heard     int // group records the client took
	lastHeard map[gkey]int
}

func newGroupScene(t *testing.T) *groupScene {
	t.Helper()
	s := &groupScene{t: t, now: time.Unix(0, 0), lastHeard: map[gkey]int{}}
	var err error
	if s.w, err = NewWorld(groupsConfig(), s.now, &s.out); err != nil {
		t.Fatal(err)
	}
	s.me, _ = s.w.Spawn(Player, Logic{Pos: Vec{1500, 1500}, Dest: Vec{1500, 1500}, Life: 100}, Display{Name: "me"})
	s.near, _ = s.w.Spawn(NPC, Logic{Pos: Vec{1700, 1500}, Life: 100}, Display{Name: "wolf"})
	s.far, _ = s.w.Spawn(NPC, Logic{Pos: Vec{9000, 9000}, Life: 100}, Display{Name: "deer"})
	// Set before the client comes: it learns them as a newcomer does.
	for _, id := range []ID{s.near, s.far} {
		s.set(id, 0, 77, 3)
		s.set(id, 1, 0b101, -2)
		s.set(id, 2, 900)
	}
	if err := s.w.Join(s.me); err != nil {
		t.Fatal(err)
	}
	s.cl, _ = NewClient(s.w.Config(), s.me)
	return s
}

func (s *groupScene) set(id ID, g int, vals ...int64) {
	s.t.Helper()
	if err := s.w.SetGroup(id, g, vals...); err != nil {
		s.t.Fatal(err)
	}
}

func (s *groupScene) frames(n int) {
	for range n {
		s.now = s.now.Add(s.w.Config().Period())
		s.w.Tick(s.now)
		for _, m := range s.out.msgs {
			if err := s.cl.Deliver(s.now, m); err != nil {
				s.t.Fatal(err)
			}
		}
		s.out.msgs = s.out.msgs[:0]
		s.cl.Advance(s.now)
		if p := s.cl.Packet(s.now); p != nil {
			if err := s.w.Deliver(s.me, p); err != nil {
				s.t.Fatal(err)
			}
		}
	}
}

func (s *groupScene) group(id ID, g int) []int64 {
	v, _ := s.cl.Group(id, g)
	return v
}

// TestFieldGroups: a game's field groups reach the clients in range as
// each group says. A client that learns an entity gets its groups sent
// on change and on a period with its display data, not those sent on
// request, nor any of an entity out of range; a change on change is
// there the next frames; a group with a period sends a run of changes
// as at most one update a period, the last values last; one sent on
// request comes when the client asks; signed fields keep their sign.
func TestFieldGroups(t *testing.T) {
	s := newGroupScene(t)
	s.frames(8)
	if _, ok := s.cl.Entity(s.near); !ok {
		t.Fatal("the client does not know the wolf")
	}
	if got := s.group(s.near, 0); !slices.Equal(got, []int64{77, 3}) {
		t.Fatalf("the wolf's guild %v, want [77 3] with its display data", got)
	}
	if got := s.group(s.near, 1); !slices.Equal(got, []int64{0b101, -2}) {
		t.Fatalf("the wolf's buffs %v, want [5 -2]", got)
	}
	if _, ok := s.cl.Group(s.near, 2); ok {
		t.Fatal("a group sent on request came unasked")
	}
	if _, ok := s.cl.Group(s.far, 0); ok {
		t.Fatal("the client holds a group of an entity out of its range")
	}

	// On change: there two frames later (the world's frame, the client's).
	s.set(s.near, 0, 78, 4)
	s.frames(2)
	if got := s.group(s.near, 0); !slices.Equal(got, []int64{78, 4}) {
		t.Fatalf("the guild after a change: %v", got)
	}
	// Equal values send nothing.
	before := s.w.Stats().GroupChanges
	s.set(s.near, 0, 78, 4)
	s.frames(2)
	if n := s.w.Stats().GroupChanges - before; n != 0 {
		t.Fatalf("%d group changes sent for values that did not change", n)
	}

	// At most once a second: 32 changes in two seconds make at most 3
	// updates (one at once, then one a second), the last one the last
	// values.
	before = s.w.Stats().GroupChanges
	for i := range 32 {
		s.set(s.near, 1, int64(i), int64(-i))
		s.frames(1)
	}
	s.frames(s.w.Config().Hz + 1)
	if n := s.w.Stats().GroupChanges - before; n < 2 || n > 3 {
		t.Fatalf("%d updates of a once-a-second group for 32 changes in 2 s, want 2 or 3", n)
	}
	if got := s.group(s.near, 1); !slices.Equal(got, []int64{31, -31}) {
		t.Fatalf("buffs %v, want the last [31 -31]", got)
	}

	// A world far behind skips frames: a change due in them is sent
	// after, not lost.
	s.set(s.near, 0, 79, 5)
	s.now = s.now.Add(3 * time.Second) // the world runs a second of it and skips the rest
	s.frames(3)
	if got := s.group(s.near, 0); !slices.Equal(got, []int64{79, 5}) {
		t.Fatalf("a change due in skipped frames: the client has %v", got)
	}
	if st := s.w.Stats(); st.SkippedFrames == 0 {
		t.Fatal("the world skipped no frame")
	}

	// On request.
	if err := s.cl.RequestGroup(s.near, 2); err != nil {
		t.Fatal(err)
	}
	s.frames(3)
	if got := s.group(s.near, 2); !slices.Equal(got, []int64{900}) {
		t.Fatalf("inspect %v, want [900] once asked", got)
	}
	if s.cl.Stats().GroupRecords == 0 {
		t.Fatal("no group records counted")
	}
}

// TestFieldGroupsBounds: the world refuses values out of their fields,
// the wrong count, an unknown group; a configuration refuses groups that
// cannot work; a client's request for an entity out of its range is
// dropped and counted, and the world sends nothing for it.
func TestFieldGroupsBounds(t *testing.T) {
	s := newGroupScene(t)
	for name, err := range map[string]error{
		"too wide":   s.w.SetGroup(s.near, 0, 1<<24, 0),
		"negative":   s.w.SetGroup(s.near, 0, -1, 0),
		"signed low": s.w.SetGroup(s.near, 1, 0, -129),
		"count":      s.w.SetGroup(s.near, 0, 1),
		"group":      s.w.SetGroup(s.near, 3, 1),
		"unknown":    s.w.SetGroup(999, 0, 1, 1),
	} {
		if err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
	// An entity with only a group sent on request has no newcomer record:
	// its display answer carries no group record, which would be malformed.
	only, _ := s.w.Spawn(NPC, Logic{Pos: Vec{1600, 1600}, Life: 100}, Display{Name: "hermit"})
	s.set(only, 2, 7)
	s.frames(8)
	if _, ok := s.cl.Entity(only); !ok {
		t.Fatal("the client does not know the hermit")
	}
	if _, ok := s.cl.Group(only, 2); ok {
		t.Fatal("a group sent on request came with the display data")
	}
	for name, g := range map[string][]Group{
		"no fields":   {{Name: "a"}},
		"no name":     {{Fields: []Field{{Bits: 1}}}},
		"65 bits":     {{Name: "a", Fields: []Field{{Bits: 65}}}},
		"request+per": {{Name: "a", Request: true, Every: time.Second, Fields: []Field{{Bits: 1}}}},
		"too many":    slices.Repeat([]Group{{Name: "a", Fields: []Field{{Bits: 1}}}}, MaxGroups+1),
		"too wide":    {{Name: "a", Fields: slices.Repeat([]Field{{Bits: 64}}, 9)}},
	} {
		c := testConfig()
		c.Groups = g
		if err := c.WithDefaults().Validate(); !errors.Is(err, ErrConfig) {
			t.Errorf("%s: %v, want ErrConfig", name, err)
		}
	}
	s.frames(8)
	before := s.w.Stats().Dropped[DropOutOfRange]
	if err := s.w.Deliver(s.me, uplinkBytes(t, s.w, &uplink{groups: []gkey{{s.far, 2}}})); err == nil {
		t.Fatal("a request for a group out of range was taken")
	}
	if s.w.Stats().Dropped[DropOutOfRange] != before+1 {
		t.Fatal("the request out of range was not counted")
	}
	s.frames(2)
	if _, ok := s.cl.Group(s.far, 2); ok {
		t.Fatal("the world answered a request out of range")
	}
	// A display message with a record of no group, or one cut short, is
	// dropped whole: the groups before it are not taken either.
	before = s.cl.Stats().GroupRecords
	for name, mask := range map[string]uint64{"no group": 0, "cut short": 0b111} {
		var w codec.Writer
		w.WriteBits(kindDisplay, kindBits)
		w.WriteUint(0, maxDisplayBatch)
		w.WriteUint(2, maxGroupRecords)
		s.w.lay.writeID(&w, s.near)
		w.WriteBits(0b1, 3)
		s.w.lay.writeGroupValues(&w, 0, []int64{1, 1})
		s.w.lay.writeID(&w, s.near)
		w.WriteBits(mask, 3)
		if err := s.cl.Deliver(s.now, w.Bytes()); !errors.Is(err, ErrMalformed) {
			t.Fatalf("%s: %v, want ErrMalformed", name, err)
		}
	}
	if s.cl.Stats().GroupRecords != before {
		t.Fatal("a malformed message's groups were taken")
	}
}

// TestClientGroupsConfig: the groups a world's clients get round-trip,
// names and all; what decodes validates.
func TestClientGroupsConfig(t *testing.T) {
	c := groupsConfig().WithDefaults()
	var w codec.Writer
	WriteClientConfig(&w, c)
	WriteClientGroups(&w, c.Groups)
	r := codec.NewReader(w.Bytes())
	got, err := ReadClientConfig(r)
	if err == nil {
		got, err = ReadClientGroups(r, got)
	}
	if err != nil || r.Done() != nil {
		t.Fatal(err, r.Done())
	}
	if len(got.Groups) != 3 || got.Groups[1].Every != time.Second || !got.Groups[2].Request ||
		got.Groups[1].Fields[1] != (Field{Name: "stacks", Bits: 8, Signed: true}) || got.Groups[0].Name != "guild" {
		t.Fatalf("groups %+v", got.Groups)
	}
}

// FuzzGroupsDownlink feeds arbitrary bytes to a client of a world with
// field groups, from the messages of a scene that has them.
func FuzzGroupsDownlink(f *testing.F) {
	rec := &recorder{}
	w, err := NewWorld(groupsConfig(), time.Unix(0, 0), rec)
	if err != nil {
		f.Fatal(err)
	}
	me, _ := w.Spawn(Player, Logic{Pos: Vec{1500, 1500}}, Display{Name: "me"})
	_ = w.Join(me)
	for i := range 5 {
		id, _ := w.Spawn(NPC, Logic{Pos: Vec{int32(1000 + 60*i), 1600}, Life: 50}, Display{Name: "npc"})
		_ = w.SetGroup(id, 0, int64(i), 1)
		_ = w.SetGroup(id, 1, 3, -4)
	}
	for n := 1; n <= 20; n++ {
		w.Tick(time.Unix(0, 0).Add(time.Duration(n) * w.cfg.Period()))
	}
	_ = w.Deliver(me, uplinkBytes(f, w, &uplink{display: []uint32{2, 3}, groups: []gkey{{4, 2}}}))
	_ = w.SetGroup(2, 0, 9, 9)
	w.Tick(time.Unix(0, 0).Add(21 * w.cfg.Period()))
	for _, m := range rec.msgs {
		f.Add(m)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		c, _ := NewClient(groupsConfig(), me)
		_ = c.Deliver(time.Unix(1, 0), b)
		for g := range 3 {
			c.Group(2, g)
		}
	})
}

// FuzzGroupsUplink feeds arbitrary bytes to a world with field groups.
func FuzzGroupsUplink(f *testing.F) {
	w, err := NewWorld(groupsConfig(), time.Unix(0, 0), discard{})
	if err != nil {
		f.Fatal(err)
	}
	id, _ := w.Spawn(Player, Logic{Pos: Vec{500, 500}}, Display{})
	npc, _ := w.Spawn(NPC, Logic{Pos: Vec{600, 500}}, Display{})
	_ = w.SetGroup(npc, 2, 5)
	_ = w.Join(id)
	f.Add(uplinkBytes(f, w, &uplink{groups: []gkey{{npc, 2}, {npc, 0}}}))
	f.Add(uplinkBytes(f, w, &uplink{display: []uint32{uint32(npc)}}))
	f.Fuzz(func(t *testing.T, b []byte) {
		_ = w.Deliver(id, b)
		w.Tick(time.Unix(0, 0).Add(time.Duration(w.Frame()+1) * w.cfg.Period()))
	})
}

// TestSnapshotGroups: a world's field groups go with its snapshot (a
// checkpoint, a move to another process) and come back as they were; a
// cut snapshot is refused, and so is one of a world without the groups.
func TestSnapshotGroups(t *testing.T) {
	s := newGroupScene(t)
	s.frames(4)
	s.set(s.near, 1, 1<<31, -128)
	snap := s.w.AppendSnapshot(nil)
	dst, _ := NewWorld(groupsConfig(), time.Unix(0, 0), nopSender{})
	if err := dst.RestoreSnapshot(snap); err != nil {
		t.Fatal(err)
	}
	for _, id := range []ID{s.near, s.far} {
		for g := range 3 {
			a, okA := s.w.Group(id, g)
			b, okB := dst.Group(id, g)
			if !slices.Equal(a, b) || okA != okB {
				t.Fatalf("entity %d group %d: %v %v, restored %v %v", id, g, a, okA, b, okB)
			}
		}
	}
	if _, ok := dst.Group(s.me, 0); ok {
		t.Fatal("the player has a group it never had")
	}
	for _, cut := range []int{len(snap) - 1, len(snap) - 3} {
		w, _ := NewWorld(groupsConfig(), time.Unix(0, 0), nopSender{})
		if err := w.RestoreSnapshot(snap[:cut]); !errors.Is(err, ErrMalformed) {
			t.Errorf("cut at %d: %v, want ErrMalformed", cut, err)
		}
	}
	plain, _ := NewWorld(testConfig(), time.Unix(0, 0), nopSender{})
	if err := plain.RestoreSnapshot(snap); err == nil {
		t.Error("a world without field groups took a snapshot with them")
	}
}

// TestGroupVectors: the field groups' test vectors in testdata/vectors
// (SPEC.md §8.2, §8.3) are what the world and the client write, and
// decode to what they say.
func TestGroupVectors(t *testing.T) {
	cfg := Config{Width: 8, Height: 8, Groups: groupsConfig().Groups}
	rec := &recorder{}
	w, err := NewWorld(cfg, time.Unix(0, 0), rec)
	if err != nil {
		t.Fatal(err)
	}
	me, _ := w.Spawn(Player, Logic{Pos: Vec{1000, 1000}, Life: 100}, Display{Name: "you"})
	npc, _ := w.Spawn(NPC, Logic{Pos: Vec{1500, 900}, Life: 80}, Display{Name: "wolf", Appearance: 3})
	_ = w.Join(me)
	_ = w.SetGroup(npc, 0, 77, 3)
	_ = w.SetGroup(npc, 1, 5, -2)
	_ = w.SetGroup(npc, 2, 900)
	w.Tick(time.Unix(0, 0).Add(w.cfg.Period()))
	rec.msgs = nil
	up := uplinkBytes(t, w, &uplink{display: []uint32{uint32(npc)}, groups: []gkey{{npc, 2}}})
	if err := w.Deliver(me, up); err != nil {
		t.Fatal(err)
	}
	display := rec.msgs[0]
	w.Tick(time.Unix(0, 0).Add(2 * w.cfg.Period()))
	answer := rec.msgs[len(rec.msgs)-1]
	dir := filepath.Join("testdata", "vectors")
	for _, v := range []struct {
		name, about string
		msg         []byte
	}{
		{"uplink-groups", "8.2 uplink in a world with the field groups guild (id 24 bits, rank 4), buffs every 1 s (mask 32 bits, stacks 8 bits signed) " +
			"and inspect on request (gear 16 bits), of an 8 x 8-region map: no acknowledgement, no commands, a display request for entity 2, " +
			"and a request for entity 2's group 2", up},
		{"display-groups", "8.3 display reply in that world: entity 2 named \"wolf\" with appearance 3, and its groups sent on change and on a period: " +
			"guild 77 rank 3, buffs mask 5 stacks -2", display},
		{"display-group-answer", "8.3 display message in that world with no display data: entity 2's group 2 (gear 900), as asked", answer},
	} {
		if err := vectorfile.Check(dir, v.name, v.about, v.msg, *updateVectors); err != nil {
			t.Fatal(err)
		}
	}
	c, _ := NewClient(cfg, me)
	c.ents[npc] = &known{kind: NPC}
	for _, m := range [][]byte{display, answer} {
		if err := c.Deliver(time.Unix(1, 0), m); err != nil {
			t.Fatal(err)
		}
	}
	for g, want := range [][]int64{{77, 3}, {5, -2}, {900}} {
		if got, _ := c.Group(npc, g); !slices.Equal(got, want) {
			t.Fatalf("group %d read back %v, want %v", g, got, want)
		}
	}
}

// TestGroupsAcrossCells: in a map cut into cells, an entity's field
// groups go with its border messages: a player's client in the west
// learns the groups of an east wolf by the border (the west's ghost has
// them) and hears their changes; the player's own groups go with it when
// it crosses into the east, which sends them on from there.
func TestGroupsAcrossCells(t *testing.T) {
	x := newCrossingWith(t, func(c *Config) { c.Groups = groupsConfig().Groups })
	if err := x.ws[0].SetGroup(x.id, 0, 5, 1); err != nil {
		t.Fatal(err)
	}
	wolf, err := x.ws[1].Spawn(NPC, Logic{Pos: Vec{X: 4300, Y: 2048}, Life: 100}, Display{Name: "wolf"})
	if err != nil {
		t.Fatal(err)
	}
	if err := x.ws[1].SetGroup(wolf, 0, 77, 3); err != nil {
		t.Fatal(err)
	}
	for range 10 {
		x.frame()
	}
	if got, _ := x.ws[0].Group(wolf, 0); !slices.Equal(got, []int64{77, 3}) {
		t.Fatalf("the west's ghost of the wolf has groups %v", got)
	}
	if got, _ := x.cl.Group(wolf, 0); !slices.Equal(got, []int64{77, 3}) {
		t.Fatalf("ann's client in the west has the east wolf's guild %v", got)
	}
	if err := x.ws[1].SetGroup(wolf, 0, 78, 3); err != nil {
		t.Fatal(err)
	}
	for range 4 {
		x.frame()
	}
	if got, _ := x.cl.Group(wolf, 0); !slices.Equal(got, []int64{78, 3}) {
		t.Fatalf("after the east changed it: %v", got)
	}
	if err := x.ws[0].SetGroup(wolf, 0, 1, 1); !errors.Is(err, ErrGhost) {
		t.Fatalf("the west set a ghost's group: %v", err)
	}
	// Ann crosses into the east, her groups with her.
	if err := x.cl.Move(Vec{X: 4500, Y: 2048}, 40); err != nil {
		t.Fatal(err)
	}
	for !x.frame() {
	}
	x.follow(false)
	for range 6 {
		x.frame()
	}
	if got, _ := x.ws[1].Group(x.id, 0); !slices.Equal(got, []int64{5, 1}) {
		t.Fatalf("the east has ann's groups %v", got)
	}
	if err := x.ws[1].SetGroup(x.id, 0, 6, 2); err != nil {
		t.Fatal(err)
	}
	for range 4 {
		x.frame()
	}
	if got, _ := x.ws[0].Group(x.id, 0); !slices.Equal(got, []int64{6, 2}) {
		t.Fatalf("the west's ghost of ann has %v after the east changed it", got)
	}
}

// FuzzBorderGroups feeds arbitrary border messages to a cell of a map
// with field groups, seeded with ones that carry groups: no panic, and
// the cell's own entity stays its own.
func FuzzBorderGroups(f *testing.F) {
	groups := groupsConfig().Groups
	src, _ := NewWorld(Config{Width: 8, Height: 4, MaxEntities: 1024, IDStride: 2, Groups: groups}, time.Unix(0, 0), nopSender{})
	wolf, _ := src.Spawn(NPC, Logic{Pos: Vec{3900, 1000}, Dest: Vec{4500, 1000}, Speed: 10, Life: 100}, Display{Name: "wolf"})
	_ = src.SetGroup(wolf, 0, 77, 3)
	_ = src.SetGroup(wolf, 1, 1, -1)
	b, err := src.NewBorder(Rect{0, 0, 4, 4}, Rect{4, 0, 8, 4})
	if err != nil {
		f.Fatal(err)
	}
	msg, _ := b.Write(nil)
	f.Add(msg)
	for range 20 {
		src.Tick(src.NextFrame())
		msg, _ := b.Write(nil)
		f.Add(msg)
	}
	east := Config{Width: 8, Height: 4, MaxEntities: 1024, IDStride: 2, IDOffset: 1, Groups: groups}
	f.Fuzz(func(t *testing.T, msg []byte) { applyAsEast(t, east, msg) })
}
