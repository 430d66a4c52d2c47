//go:build js

package view

import (
	"fmt"
	"image/color"
	"strconv"
	"strings"
	"syscall/js"
	"time"

	"github.com/hajimehoshi/ebiten/v2"
	"github.com/hajimehoshi/ebiten/v2/ebitenutil"
	"github.com/hajimehoshi/ebiten/v2/inpututil"
	"github.com/hajimehoshi/ebiten/v2/vector"

	"github.com/tongbu/tongbu/engine"
	"github.com/tongbu/tongbu/examples/duel/game"
	"github.com/tongbu/tongbu/lockstep"
)

// The screen: the stage at one pixel a unit.
const (
	screenW = game.StageWidth
	screenH = 360
	floorY  = 290
	bodyH   = 96
)

// View is the duel's ebiten.Game in the browser: it reads the keyboard,
// ticks the Session and draws the present, with the rollback figures.
type View struct {
	s     *Session
	latch bool // a jab pressed and released between two ticks
	pub   js.Value
	hash  js.Value
	now   time.Time
}

// New starts the duel over c and publishes its figures to the page as
// tongbuDuel: slot, frame (frames run), confirmed, rollbacks, depth (the
// deepest rollback), stalls, jabs (the player's), error, and hashes, the
// confirmed state hashes by frame as 16 hex digits.
func New(c *engine.Client) (*View, error) {
	v := &View{pub: js.Global().Get("Object").New(), hash: js.Global().Get("Object").New()}
	v.pub.Set("hashes", v.hash)
	s, err := NewSession(c, lockstep.RollbackConfig{OnConfirmedHash: func(frame int, hash uint64) {
		v.hash.Set(strconv.Itoa(frame), fmt.Sprintf("%016x", hash))
		v.hash.Delete(strconv.Itoa(frame - 64*c.LockstepConfig().HashEvery)) // keep about a minute
	}})
	if err != nil {
		return nil, err
	}
	v.s = s
	v.pub.Set("slot", s.Slot())
	js.Global().Set("tongbuDuel", v.pub)
	return v, nil
}

// Run opens the canvas and runs v until the page goes away.
func Run(v *View) error {
	ebiten.SetWindowTitle("tongbu duel")
	ebiten.SetWindowSize(screenW*2, screenH*2)
	ebiten.SetRunnableOnUnfocused(true)
	ebiten.SetTPS(game.Hz)
	return ebiten.RunGame(v)
}

// Update reads the keys and runs one tick: A/D or the arrows walk, J or
// space jabs, K, S or down guards.
func (v *View) Update() error {
	v.now = time.Now()
	var in game.Input
	if ebiten.IsKeyPressed(ebiten.KeyA) || ebiten.IsKeyPressed(ebiten.KeyArrowLeft) {
		in |= game.Left
	}
	if ebiten.IsKeyPressed(ebiten.KeyD) || ebiten.IsKeyPressed(ebiten.KeyArrowRight) {
		in |= game.Right
	}
	if ebiten.IsKeyPressed(ebiten.KeyK) || ebiten.IsKeyPressed(ebiten.KeyS) || ebiten.IsKeyPressed(ebiten.KeyArrowDown) {
		in |= game.Guard
	}
	jab := ebiten.IsKeyPressed(ebiten.KeyJ) || ebiten.IsKeyPressed(ebiten.KeySpace) || ebiten.IsMouseButtonPressed(ebiten.MouseButtonLeft)
	if inpututil.IsKeyJustPressed(ebiten.KeyJ) || inpututil.IsKeyJustPressed(ebiten.KeySpace) || inpututil.IsMouseButtonJustPressed(ebiten.MouseButtonLeft) {
		v.latch = true
	}
	if jab || v.latch {
		in |= game.Jab
	}
	before := v.s.Last().Present
	v.s.Tick(v.now, in)
	if v.s.Last().Present > before {
		v.latch = false // the press is in a frame now
	}
	v.publish()
	return nil
}

func (v *View) publish() {
	st := v.s.Stats()
	last := v.s.Last()
	v.pub.Set("frame", last.Present)
	v.pub.Set("confirmed", last.Confirmed)
	v.pub.Set("rollbacks", st.Rollbacks)
	v.pub.Set("depth", st.MaxDepth)
	v.pub.Set("stalls", st.Stalls)
	v.pub.Set("jabs", v.s.Game().Fighter(v.s.Slot()).Jabs)
	if err := v.s.Err(); err != nil {
		v.pub.Set("error", err.Error())
	}
}

// Layout fixes the logical screen; Ebiten scales it to the canvas.
func (v *View) Layout(int, int) (int, int) { return screenW, screenH }

var (
	sky       = color.RGBA{0x16, 0x18, 0x24, 0xff}
	ground    = color.RGBA{0x2a, 0x2e, 0x3c, 0xff}
	white     = color.RGBA{0xff, 0xff, 0xff, 0xff}
	startup   = color.RGBA{0xf1, 0xc4, 0x0f, 0xff}
	active    = color.RGBA{0xff, 0x40, 0x30, 0xff}
	recovery  = color.RGBA{0x80, 0x80, 0x90, 0xff}
	guard     = color.RGBA{0x7f, 0xdf, 0xff, 0xff}
	hpBack    = color.RGBA{0x40, 0x10, 0x10, 0xff}
	hpFill    = color.RGBA{0x50, 0xe0, 0x60, 0xff}
	overlayBg = color.RGBA{0, 0, 0, 0x99}
	colours   = [game.Players]color.RGBA{{0xe6, 0x4b, 0x3c, 0xff}, {0x34, 0x98, 0xdb, 0xff}}
)

// Draw draws the present: the fighters, their health and wins, and the
// prediction figures.
func (v *View) Draw(screen *ebiten.Image) {
	g := v.s.Game()
	screen.Fill(sky)
	vector.DrawFilledRect(screen, 0, floorY, screenW, screenH-floorY, ground, false)
	for i := range game.Players {
		v.drawFighter(screen, i, g.Fighter(i))
		v.drawHealth(screen, i, g.Fighter(i))
	}
	switch {
	case g.Winner() >= 0:
		banner(screen, fmt.Sprintf("P%d WINS THE MATCH", g.Winner()+1))
	case g.Pause() > 0:
		banner(screen, "K.O.")
	}
	v.drawOverlay(screen)
}

func (v *View) drawFighter(screen *ebiten.Image, i int, f game.Fighter) {
	x := float32(f.X.Float64())
	w := float32(game.Width)
	c := colours[i]
	if f.Action == game.KnockedOut {
		vector.DrawFilledRect(screen, x-bodyH/2, floorY-w/2, bodyH, w/2, c, false)
		return
	}
	if f.Action == game.HitStunned && f.T%4 < 2 {
		c = white
	}
	vector.DrawFilledRect(screen, x-w/2, floorY-bodyH, w, bodyH, c, false)
	if i == v.s.Slot() {
		ebitenutil.DebugPrintAt(screen, "you", int(x)-9, floorY-bodyH-18)
	}
	dir := float32(f.Facing)
	arm := func(length float32, col color.RGBA) {
		x0 := x + dir*w/2
		if dir < 0 {
			x0 -= length
		}
		vector.DrawFilledRect(screen, x0, floorY-bodyH+20, length, 10, col, false)
	}
	switch f.Action {
	case game.Startup:
		arm(float32(f.T+1)*3, startup)
	case game.Active:
		arm(game.Reach-game.Width/2, active)
	case game.Recovery:
		arm(float32(game.JabRecovery-f.T)*2, recovery)
	case game.Blocking, game.BlockStunned:
		vector.DrawFilledRect(screen, x+dir*(w/2+2)-3, floorY-bodyH+6, 6, bodyH-20, guard, false)
	}
}

func (v *View) drawHealth(screen *ebiten.Image, i int, f game.Fighter) {
	const barW, y = 240, 14
	x := float32(16)
	if i == 1 {
		x = screenW - 16 - barW
	}
	vector.DrawFilledRect(screen, x, y, barW, 12, hpBack, false)
	fill := barW * float32(f.Health) / game.MaxHealth
	if i == 1 {
		vector.DrawFilledRect(screen, x+barW-fill, y, fill, 12, hpFill, false)
	} else {
		vector.DrawFilledRect(screen, x, y, fill, 12, hpFill, false)
	}
	for k := range game.Rounds {
		pip := colours[i]
		if int32(k) >= f.Wins {
			pip = hpBack
		}
		px := x + float32(k)*16
		if i == 1 {
			px = x + barW - 10 - float32(k)*16
		}
		vector.DrawFilledRect(screen, px, y+16, 10, 6, pip, false)
	}
	ebitenutil.DebugPrintAt(screen, fmt.Sprintf("P%d  %s  jabs %d hits %d blocked %d", i+1, f.Action, f.Jabs, f.Hits, f.Blocks), int(x), y+24)
}

func banner(screen *ebiten.Image, s string) {
	vector.DrawFilledRect(screen, 0, 120, screenW, 30, overlayBg, false)
	ebitenutil.DebugPrintAt(screen, s, screenW/2-len(s)*3, 128)
}

// drawOverlay shows the prediction at work: frames run and confirmed,
// rollbacks, the round trip.
func (v *View) drawOverlay(screen *ebiten.Image) {
	last := v.s.Last()
	st := v.s.Stats()
	var b strings.Builder
	fmt.Fprintf(&b, "frame %d  confirmed %d  predicted %d ahead\n", last.Present, last.Confirmed, last.Present-last.Confirmed)
	fmt.Fprintf(&b, "rollbacks %d (deepest %d, %d frames re-run)  stalls %d\n", st.Rollbacks, st.MaxDepth, st.Resimulated, st.Stalls)
	fmt.Fprintf(&b, "rtt %d ms  A/D walk  J jab  K guard  (jab: 9 startup, 2 active, 13 recovery)", v.s.RTT().Milliseconds())
	if err := v.s.Err(); err != nil {
		fmt.Fprintf(&b, "\n%s", err)
	}
	lines := strings.Count(b.String(), "\n") + 1
	vector.DrawFilledRect(screen, 0, screenH-float32(lines*16)-6, screenW, float32(lines*16+6), overlayBg, false)
	ebitenutil.DebugPrintAt(screen, b.String(), 6, screenH-lines*16-3)
}
