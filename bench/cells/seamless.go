//go:build !js

package cells

import (
	"fmt"
	"math/rand/v2"
	"runtime"
	"runtime/debug"
	"slices"
	"time"

	"github.com/tongbu/tongbu/interest"
)

// The seamless part of the scenario: one map cut into 1 (the baseline),
// 2 and 4 cells, each an interest.World joined to its neighbours by
// interest.Border, with the border messages carried between frames (what
// cluster.ServeCell sends over NATS) and every client's packets delivered
// a frame later (an in-memory link), in virtual time. Players walk and run
// across the borders; NPCs wander. Each client's known set is checked
// every frame against the truth of the whole map.

type seamlessParams struct {
	players, npcs int
	seconds       int
	seed          uint64
	size          int  // the map's width and height in regions (default 32)
	wide          bool // the map twice as wide as it is high
	noCheck       bool // skip the known-set checks (the scale search: ticks only)
}

// seamlessFigures are one cut's figures.
type seamlessFigures struct {
	cells         int
	knownErrors   int           // differences that outlived the bound
	maxDiff       time.Duration // the longest difference
	leaks         int           // entities a client learned while out of its range (as its cell knows the map)
	leaksNow      int           // the same, against the map now: a neighbour's entity where it is, not a frame ago
	crossings     int
	crossGapMax   int // frames a crossing player's client missed an entity it knew before
	clientBps     float64
	borderBps     float64 // border bytes a second, all borders
	borderRegions int     // regions in the borders' bands
	tickP99       time.Duration
	cellTickP99   time.Duration     // the worst cell's own tick p99
	cellTickP50   time.Duration     // and p50
	cellTicks     [][]time.Duration // each cell's timed ticks, frame by frame
}

type splayer struct {
	id    interest.ID
	c     *interest.Client
	at    int // the cell its client is attached to
	run   bool
	next  int // frame of its next move
	diff  map[interest.ID]int
	gap   map[interest.ID]int // after a crossing: entities known before, by the frame the gap began
	known map[interest.ID]bool
	prev  map[interest.ID]bool // last frame's truth
	// last frame's truth of the map, every entity where it was then
	prevNow map[interest.ID]bool
	bytes   int64
	// packets on their way to the client, delivered after the frame's
	// ticks: one buffer, reused, and where each packet ends in it (no
	// allocation in a timed tick once it has grown)
	in    []byte
	inEnd []int
	up    [][]byte // the client's uplink on its way to its cell
}

type scell struct {
	w       *interest.World
	rect    interest.Rect
	borders map[int]*interest.Border
	players map[interest.ID]*splayer
	ticks   []time.Duration
}

type seamlessRun struct {
	cfg      interest.Config
	cells    []*scell
	players  []*splayer
	npcs     []interest.ID
	rng      *rand.Rand
	frame    int
	inflight []struct {
		from, to int
		msg      []byte
	}
	fig   seamlessFigures
	bound int // frames a difference may last

	handing       map[interest.ID]int // handed over, not yet adopted: by the cell that handed it
	where         map[interest.ID]where
	byNow, byLast map[interest.Region][]interest.ID
}

// sender delivers a cell's packets to its clients' queues.
type sender struct{ c *scell }

func (s sender) SendUnreliable(id interest.ID, msg []byte) error {
	if p := s.c.players[id]; p != nil {
		p.in = append(p.in, msg...)
		p.inEnd = append(p.inEnd, len(p.in))
		p.bytes += int64(len(msg))
	}
	return nil
}
func (s sender) SendReliable(id interest.ID, msg []byte) error { return s.SendUnreliable(id, msg) }

func runSeamless(p seamlessParams, nx, ny int) (seamlessFigures, error) {
	size := p.size
	if size == 0 {
		size = 32
	}
	maxEnt := 1 << 16
	for maxEnt < 2*(p.players+p.npcs) {
		maxEnt <<= 1
	}
	width := size
	if p.wide {
		width = 2 * size
	}
	cfg := interest.Config{Width: width, Height: size, MaxEntities: maxEnt}.WithDefaults()
	r := &seamlessRun{cfg: cfg, rng: rand.New(rand.NewPCG(p.seed, 3)), handing: map[interest.ID]int{},
		byNow: map[interest.Region][]interest.ID{}, byLast: map[interest.Region][]interest.ID{}}
	r.bound = 2*cfg.Hz + 3 // the single world's 2 s, and the border's three frames
	start := time.Unix(1_800_000_000, 0)
	n := nx * ny
	r.fig.cells = n
	for i := range n {
		c := cfg
		c.IDStride, c.IDOffset = n, i
		x, y := i%nx, i/nx
		sc := &scell{rect: interest.Rect{X0: x * cfg.Width / nx, Y0: y * cfg.Height / ny, X1: (x + 1) * cfg.Width / nx, Y1: (y + 1) * cfg.Height / ny},
			borders: map[int]*interest.Border{}, players: map[interest.ID]*splayer{}}
		w, err := interest.NewWorld(c, start, sender{sc})
		if err != nil {
			return r.fig, err
		}
		sc.w = w
		r.cells = append(r.cells, sc)
	}
	for i, c := range r.cells {
		for j, d := range r.cells {
			if i != j {
				if b, err := c.w.NewBorder(c.rect, d.rect); err == nil {
					c.borders[j] = b
				}
			}
		}
	}
	for i := range p.npcs {
		pos := r.randPos()
		id, err := r.owner(pos).w.Spawn(interest.NPC, interest.Logic{Pos: pos, Life: 100}, interest.Display{Name: "npc", Appearance: uint32(i % 7)})
		if err != nil {
			return r.fig, err
		}
		r.npcs = append(r.npcs, id)
	}
	for i := range p.players {
		pos := r.randPos()
		ci := r.ownerIndex(pos)
		id, err := r.cells[ci].w.Spawn(interest.Player, interest.Logic{Pos: pos, Dest: pos, Life: 100}, interest.Display{Name: fmt.Sprint("p", i)})
		if err != nil {
			return r.fig, err
		}
		sp := &splayer{id: id, run: i%2 == 1, diff: map[interest.ID]int{}, known: map[interest.ID]bool{}}
		if err := r.attach(sp, ci); err != nil {
			return r.fig, err
		}
		r.players = append(r.players, sp)
	}
	r.fig.borderRegions = r.bandRegions()
	frames := p.seconds * cfg.Hz
	var borderBytes int64
	for f := 1; f <= frames; f++ {
		r.frame = f
		now := start.Add(time.Duration(f) * cfg.Period())
		still := f > frames-20*cfg.Hz // the last 20 s: everything stands, the sets must settle
		r.deliverUplinks()
		if !still {
			r.npcAI()
		}
		r.applyBorders()
		for _, c := range r.cells {
			t0 := time.Now()
			c.w.Tick(now)
			if f > 3*cfg.Hz { // past the joins' burst: every client's whole range due at once
				c.ticks = append(c.ticks, time.Since(t0))
			}
		}
		borderBytes += r.writeBorders()
		for _, sp := range r.players {
			r.client(sp, now, still)
		}
		if !p.noCheck {
			r.compare()
		}
	}
	secs := float64(frames) / float64(cfg.Hz)
	var total int64
	for _, sp := range r.players {
		total += sp.bytes
		for _, since := range sp.diff {
			r.episode(r.frame - since)
		}
	}
	r.fig.clientBps = float64(total) / secs / float64(len(r.players))
	r.fig.borderBps = float64(borderBytes) / secs
	var ticks []time.Duration
	for _, c := range r.cells {
		ticks = append(ticks, c.ticks...)
		own := slices.Clone(c.ticks)
		slices.Sort(own)
		r.fig.cellTickP99 = max(r.fig.cellTickP99, own[len(own)*99/100])
		r.fig.cellTickP50 = max(r.fig.cellTickP50, own[len(own)/2])
		r.fig.cellTicks = append(r.fig.cellTicks, c.ticks)
	}
	slices.Sort(ticks)
	r.fig.tickP99 = ticks[len(ticks)*99/100]
	return r.fig, nil
}

func (r *seamlessRun) randPos() interest.Vec {
	return interest.Vec{X: int32(r.rng.IntN(r.cfg.Width * r.cfg.RegionSize)), Y: int32(r.rng.IntN(r.cfg.Height * r.cfg.RegionSize))}
}

func (r *seamlessRun) nearPos(p interest.Vec, d int) interest.Vec {
	q := interest.Vec{X: p.X + int32(r.rng.IntN(2*d+1)-d), Y: p.Y + int32(r.rng.IntN(2*d+1)-d)}
	q.X = min(max(q.X, 0), int32(r.cfg.Width*r.cfg.RegionSize-1))
	q.Y = min(max(q.Y, 0), int32(r.cfg.Height*r.cfg.RegionSize-1))
	return q
}

func (r *seamlessRun) ownerIndex(p interest.Vec) int {
	g := r.cells[0].w.RegionOf(p)
	for i, c := range r.cells {
		if c.rect.Contains(g) {
			return i
		}
	}
	return 0
}

func (r *seamlessRun) owner(p interest.Vec) *scell { return r.cells[r.ownerIndex(p)] }

// bandRegions counts the regions of every cell that a neighbour mirrors.
func (r *seamlessRun) bandRegions() int {
	n := 0
	for _, c := range r.cells {
		for y := c.rect.Y0; y < c.rect.Y1; y++ {
			for x := c.rect.X0; x < c.rect.X1; x++ {
				for _, d := range r.cells {
					if d != c && x >= d.rect.X0-1 && x <= d.rect.X1 && y >= d.rect.Y0-1 && y <= d.rect.Y1 {
						n++
						break
					}
				}
			}
		}
	}
	return n
}

// attach makes cell ci serve player sp with a new client, as a real
// client that follows its entity opens a connection to the new cell.
func (r *seamlessRun) attach(sp *splayer, ci int) error {
	c := r.cells[ci]
	if err := c.w.Join(sp.id); err != nil {
		return err
	}
	cl, err := interest.NewClient(c.w.Config(), sp.id)
	if err != nil {
		return err
	}
	if sp.c != nil { // a crossing: what the old client knew, to measure the gap
		sp.gap = map[interest.ID]int{}
		sp.c.Each(func(id interest.ID, _ interest.View) { sp.gap[id] = r.frame })
		r.fig.crossings++
		cl.Inherit(sp.c) // as engine.Client does on a seamless move
	}
	sp.c, sp.at, sp.in, sp.inEnd, sp.up = cl, ci, sp.in[:0], sp.inEnd[:0], nil
	c.players[sp.id] = sp
	return nil
}

func (r *seamlessRun) deliverUplinks() {
	for _, sp := range r.players {
		c := r.cells[sp.at]
		for _, m := range sp.up {
			c.w.Deliver(sp.id, m)
		}
		sp.up = sp.up[:0]
	}
}

func (r *seamlessRun) npcAI() {
	for range len(r.npcs) / 40 {
		id := r.npcs[r.rng.IntN(len(r.npcs))]
		for _, c := range r.cells {
			if lg, ok := c.w.Logic(id); ok && !c.w.Ghost(id) {
				if !lg.Moving() {
					c.w.Move(id, r.nearPos(lg.Pos, 2*r.cfg.RegionSize), int32(8+r.rng.IntN(24)))
				}
				break
			}
		}
	}
}

func (r *seamlessRun) writeBorders() int64 {
	var bytes int64
	for i, c := range r.cells {
		for j, b := range c.borders {
			msg, handed := b.Write(nil)
			bytes += int64(len(msg))
			for _, id := range handed {
				delete(c.players, id)
				r.handing[id] = i
			}
			r.inflight = append(r.inflight, struct {
				from, to int
				msg      []byte
			}{i, j, msg})
		}
	}
	return bytes
}

func (r *seamlessRun) applyBorders() {
	for _, m := range r.inflight {
		adopted, err := r.cells[m.to].borders[m.from].Apply(m.msg)
		if err != nil {
			panic(err)
		}
		for _, id := range adopted {
			delete(r.handing, id)
			for _, sp := range r.players {
				if sp.id == id {
					r.attach(sp, m.to)
				}
			}
		}
	}
	r.inflight = r.inflight[:0]
}

// client delivers last frame's packets, advances and plays the client.
func (r *seamlessRun) client(sp *splayer, now time.Time, still bool) {
	at := 0
	for _, end := range sp.inEnd {
		sp.c.Deliver(now, sp.in[at:end])
		at = end
	}
	sp.in, sp.inEnd = sp.in[:0], sp.inEnd[:0]
	sp.c.Advance(now)
	if me, ok := sp.c.Self(); ok && !still && r.frame >= sp.next {
		d, speed := r.cfg.RegionSize, int32(8+r.rng.IntN(16))
		if sp.run {
			d, speed = 3*r.cfg.RegionSize, int32(r.cfg.MaxSpeed)
		}
		sp.c.Move(r.nearPos(me.Pos, d), speed)
		sp.next = r.frame + r.cfg.Hz/2 + r.rng.IntN(3*r.cfg.Hz)
	}
	if pkt := sp.c.Packet(now); pkt != nil {
		sp.up = append(sp.up, pkt)
	}
}

// where is an entity's owner cell and region, for the truth of a frame.
type where struct {
	cell   int
	reg    interest.Region
	at     interest.Vec
	lastAt interest.Region // its region a frame ago
}

// locate records where every entity is this frame: by its owner, or,
// handed over and not yet adopted, by the cell that handed it (it is
// still that cell's news). Entities are indexed by region: by their
// region now, and by the one they had a frame ago.
func (r *seamlessRun) locate() {
	last := r.where
	r.where = make(map[interest.ID]where, len(last))
	for ci, c := range r.cells {
		for y := 1; y < r.cfg.Height+1; y += 3 {
			for x := 1; x < r.cfg.Width+1; x += 3 {
				c.w.Each(interest.Region{X: x, Y: y}, func(id interest.ID, _ interest.Kind, lg *interest.Logic) {
					if from, handing := r.handing[id]; (handing && from != ci) || (!handing && c.w.Ghost(id)) {
						return
					}
					g := c.w.RegionOf(lg.Pos)
					wh := where{cell: ci, reg: g, at: lg.Pos, lastAt: g}
					if l, ok := last[id]; ok {
						wh.lastAt = l.reg
					}
					r.where[id] = wh
				})
			}
		}
	}
	clear(r.byNow)
	clear(r.byLast)
	for id, wh := range r.where {
		r.byNow[wh.reg] = append(r.byNow[wh.reg], id)
		r.byLast[wh.lastAt] = append(r.byLast[wh.lastAt], id)
	}
}

// truth returns the entities in the 3x3 range of a player as its cell can
// know them: its own cell's where they are, its neighbours' where they
// were a frame ago (a border message takes a frame, and a ghost never
// runs ahead of its owner's word: interest.Border).
//
// now: the map's truth instead, every entity where it is now, as one
// world would have it.
func (r *seamlessRun) truth(sp *splayer, now bool) map[interest.ID]bool {
	me := r.where[sp.id]
	out := map[interest.ID]bool{}
	for dy := -1; dy <= 1; dy++ {
		for dx := -1; dx <= 1; dx++ {
			g := interest.Region{X: me.reg.X + dx, Y: me.reg.Y + dy}
			for _, id := range r.byNow[g] {
				if (now || r.where[id].cell == sp.at) && id != sp.id {
					out[id] = true
				}
			}
			if now {
				continue
			}
			for _, id := range r.byLast[g] {
				if r.where[id].cell != sp.at && id != sp.id {
					out[id] = true
				}
			}
		}
	}
	return out
}

func (r *seamlessRun) compare() {
	r.locate()
	for _, sp := range r.players {
		truth, strict := r.truth(sp, false), r.truth(sp, true)
		for id := range truth {
			if _, ok := sp.c.Entity(id); ok {
				r.resolve(sp, id)
			} else if _, open := sp.diff[id]; !open {
				sp.diff[id] = r.frame
			}
		}
		now := map[interest.ID]bool{}
		sp.c.Each(func(id interest.ID, _ interest.View) {
			now[id] = true
			if !sp.known[id] && !truth[id] && !sp.prev[id] {
				r.fig.leaks++ // learned while out of range, now and a frame ago
			}
			if truth[id] {
				return
			}
			if _, open := sp.diff[id]; !open {
				sp.diff[id] = r.frame
			}
		})
		for id := range now {
			if !sp.known[id] && !strict[id] && !sp.prevNow[id] {
				r.fig.leaksNow++
			}
		}
		sp.known, sp.prev, sp.prevNow = now, truth, strict
		for id := range sp.diff {
			_, known := sp.c.Entity(id)
			if truth[id] == known {
				r.resolve(sp, id)
			}
		}
		for id, since := range sp.gap {
			if _, ok := sp.c.Entity(id); ok || !truth[id] {
				r.fig.crossGapMax = max(r.fig.crossGapMax, r.frame-since-1)
				delete(sp.gap, id)
			}
		}
	}
}

func (r *seamlessRun) resolve(sp *splayer, id interest.ID) {
	if since, ok := sp.diff[id]; ok {
		r.episode(r.frame - since)
		delete(sp.diff, id)
	}
}

func (r *seamlessRun) episode(frames int) {
	d := time.Duration(frames) * r.cfg.Period()
	r.fig.maxDiff = max(r.fig.maxDiff, d)
	if frames > r.bound {
		r.fig.knownErrors++
	}
}

// scaleVariant is one map of the scale search.
type scaleVariant struct {
	name   string
	nx, ny int
	wide   bool
}

// scaleVariants: the seed world's map uncut (the baseline), the same map
// in 2 cells, and a map twice as wide in 2 cells (each cell the size of
// the uncut map).
var scaleVariants = []scaleVariant{{"1 cell", 1, 1, false}, {"2 cells", 2, 1, false}, {"2 cells, map twice as wide", 2, 1, true}}

// scalePoint is a map's figures at one population: the worst cell's tick
// p99 and p50, of each frame's least tick over the runs.
type scalePoint struct{ p99, p50 time.Duration }

// scaleSearch finds, for each of scaleVariants, the most players (of
// pops, in order) whose worst cell's tick p99 is within budget. The
// variants' runs alternate at each population, so that the machine's
// drift falls on all alike. A population's runs have the same seed, and
// so each frame the same work: the tick of a frame is taken as its least
// over the repeat runs, which keeps a frame that is heavy in every run
// and drops a stall of the machine, which falls on another frame in each
// (this machine stalls a thread for 5 to 30 ms about once or twice in
// 200 frames, enough to decide a p99 alone). The GC is held off in each
// run (a memory limit stays as a guard) and the heap collected between
// runs: the cells of a cut map, which here share one process and its
// heap, each have their own in a deployment, and a collection the bench's
// clients cause is no cell's cost. at holds each variant's figures at
// every population it ran.
func scaleSearch(seed uint64, budget time.Duration, pops []int, repeat int, out func(v scaleVariant, players int, at scalePoint)) (best []int, at []map[int]scalePoint, err error) {
	best = make([]int, len(scaleVariants))
	at = make([]map[int]scalePoint, len(scaleVariants))
	done := make([]bool, len(scaleVariants))
	for i := range at {
		at[i] = map[int]scalePoint{}
	}
	defer debug.SetMemoryLimit(debug.SetMemoryLimit(-1))
	defer debug.SetGCPercent(debug.SetGCPercent(100))
	for _, n := range pops {
		least := make([][][]time.Duration, len(scaleVariants)) // by variant, cell, frame
		for k := range max(repeat, 1) {
			for i, v := range scaleVariants {
				if done[i] {
					continue
				}
				runtime.GC()
				debug.SetGCPercent(-1)
				debug.SetMemoryLimit(16 << 30)
				f, err := runSeamless(seamlessParams{players: n, npcs: n * 9 / 2, seconds: 15, seed: seed, size: 64, wide: v.wide, noCheck: true}, v.nx, v.ny)
				debug.SetGCPercent(100)
				if err != nil {
					return nil, nil, err
				}
				if k == 0 {
					least[i] = f.cellTicks
					continue
				}
				for c, ticks := range f.cellTicks {
					for fr, d := range ticks {
						if fr < len(least[i][c]) {
							least[i][c][fr] = min(least[i][c][fr], d)
						}
					}
				}
			}
		}
		for i, v := range scaleVariants {
			if done[i] {
				continue
			}
			var pt scalePoint
			for _, ticks := range least[i] {
				s := slices.Clone(ticks)
				slices.Sort(s)
				pt.p99, pt.p50 = max(pt.p99, s[len(s)*99/100]), max(pt.p50, s[len(s)/2])
			}
			at[i][n] = pt
			out(v, n, pt)
			if pt.p99 > budget {
				done[i] = true
				continue
			}
			best[i] = n
		}
		if !slices.Contains(done, false) {
			break
		}
	}
	runtime.GC()
	return best, at, nil
}
