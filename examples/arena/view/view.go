//go:build js

package view

import (
	"fmt"
	"image/color"
	"slices"
	"strings"
	"time"

	"github.com/hajimehoshi/ebiten/v2"
	"github.com/hajimehoshi/ebiten/v2/ebitenutil"
	"github.com/hajimehoshi/ebiten/v2/inpututil"
	"github.com/hajimehoshi/ebiten/v2/vector"

	"github.com/tongbu/tongbu/examples/arena/game"
	"github.com/tongbu/tongbu/lockstep/fixed"
)

// The screen: the arena at one pixel a unit, and a panel on its right for
// the scoreboard.
const (
	panelW  = 220
	screenW = game.Width + panelW
	screenH = game.Height
)

// errorShown is how long an error stays on the overlay.
const errorShown = 5 * time.Second

// View is the arena's ebiten.Game: it runs the match through a Net and
// draws it.
type View struct {
	s     *session
	aim   uint16 // the local aim, kept while the cursor is still
	latch bool   // a click or a press not yet sent
	lastX int
	lastY int
	shots []game.Shot
	order []int
	pub   publisher
	now   time.Time
}

var _ ebiten.Game = (*View)(nil)

// New returns a view of the match net plays, whose game is seeded with
// seed (the match's seed, the same for every client). It publishes the
// state hashes to the page (see README: tongbuArena).
func New(net Net, seed uint64) (*View, error) {
	s, err := newSession(net, seed)
	if err != nil {
		return nil, err
	}
	v := &View{s: s, aim: s.g.Player(s.slot).Aim}
	v.pub.init(s)
	return v, nil
}

// Run opens the window (in a browser: fills the page's canvas) and runs v
// until the window closes or the page goes away.
func Run(v *View, title string) error {
	ebiten.SetWindowTitle(title)
	ebiten.SetWindowSize(screenW, screenH)
	ebiten.SetWindowResizingMode(ebiten.WindowResizingModeEnabled)
	ebiten.SetRunnableOnUnfocused(true) // a background tab keeps playing as far as the browser lets it
	return ebiten.RunGame(v)
}

// Update is called 60 times a second: it reads the local input, runs the
// frames due and sends the input when it changed.
func (v *View) Update() error {
	v.now = time.Now()
	in := v.readInput()
	if v.s.tick(v.now, in) || v.s.firing() {
		v.latch = false // the press reached the game
	}
	v.pub.update(v.s)
	return nil
}

// readInput turns the keys and the mouse into the local player's input:
// WASD or the arrows move, the cursor aims, the left button or space
// fires. A press shorter than a frame is latched until it is sent.
func (v *View) readInput() game.Input {
	var in game.Input
	if ebiten.IsKeyPressed(ebiten.KeyA) || ebiten.IsKeyPressed(ebiten.KeyArrowLeft) {
		in.MoveX--
	}
	if ebiten.IsKeyPressed(ebiten.KeyD) || ebiten.IsKeyPressed(ebiten.KeyArrowRight) {
		in.MoveX++
	}
	if ebiten.IsKeyPressed(ebiten.KeyW) || ebiten.IsKeyPressed(ebiten.KeyArrowUp) {
		in.MoveY--
	}
	if ebiten.IsKeyPressed(ebiten.KeyS) || ebiten.IsKeyPressed(ebiten.KeyArrowDown) {
		in.MoveY++
	}
	// Aim at the cursor from where the player is in the game (not where it
	// is drawn): integer cursor, fixed-point angle.
	x, y := ebiten.CursorPosition()
	p := v.s.g.Player(v.s.slot)
	if x != v.lastX || y != v.lastY || in.MoveX != 0 || in.MoveY != 0 {
		d := fixed.V(fixed.FromInt(int64(x)), fixed.FromInt(int64(y))).Sub(p.Pos)
		if d.X != 0 || d.Y != 0 {
			v.aim = game.AimOf(d)
		}
		v.lastX, v.lastY = x, y
	}
	in.Aim = v.aim
	if inpututil.IsMouseButtonJustPressed(ebiten.MouseButtonLeft) || inpututil.IsKeyJustPressed(ebiten.KeySpace) {
		v.latch = true
	}
	in.Fire = v.latch || ebiten.IsMouseButtonPressed(ebiten.MouseButtonLeft) || ebiten.IsKeyPressed(ebiten.KeySpace)
	return in
}

// Layout fixes the logical screen; Ebiten scales it to the window.
func (v *View) Layout(int, int) (int, int) { return screenW, screenH }

// Colours.
var (
	background = color.RGBA{0x12, 0x14, 0x1c, 0xff}
	floor      = color.RGBA{0x1e, 0x22, 0x2e, 0xff}
	wallFill   = color.RGBA{0x5a, 0x60, 0x72, 0xff}
	white      = color.RGBA{0xff, 0xff, 0xff, 0xff}
	shieldRing = color.RGBA{0x7f, 0xdf, 0xff, 0xff}
	healthBack = color.RGBA{0x40, 0x10, 0x10, 0xff}
	healthFill = color.RGBA{0x50, 0xe0, 0x60, 0xff}
	overlayBg  = color.RGBA{0, 0, 0, 0x99}
	palette    = [game.MaxPlayers]color.RGBA{
		{0xe6, 0x4b, 0x3c, 0xff}, {0x34, 0x98, 0xdb, 0xff}, {0xf1, 0xc4, 0x0f, 0xff}, {0x2e, 0xcc, 0x71, 0xff},
		{0x9b, 0x59, 0xb6, 0xff}, {0xe6, 0x7e, 0x22, 0xff}, {0x1a, 0xbc, 0x9c, 0xff}, {0xec, 0x70, 0xc0, 0xff},
		{0xbd, 0xc3, 0xc7, 0xff}, {0x8d, 0x6e, 0x63, 0xff},
	}
)

func fade(c color.RGBA, a uint8) color.RGBA {
	k := uint32(a)
	return color.RGBA{uint8(uint32(c.R) * k / 255), uint8(uint32(c.G) * k / 255), uint8(uint32(c.B) * k / 255), a}
}

// lerp interpolates for drawing only: floats never reach the game.
func lerp(a, b fixed.Vec, t float64) (float32, float32) {
	ax, ay := a.X.Float64(), a.Y.Float64()
	return float32(ax + (b.X.Float64()-ax)*t), float32(ay + (b.Y.Float64()-ay)*t)
}

// Draw draws the arena one frame behind the game: between the state before
// and after the last frame run, Alpha of the way, so motion is smooth at
// any render rate.
func (v *View) Draw(screen *ebiten.Image) {
	g := v.s.g
	alpha := min(max(v.s.step.Alpha, 0), 1)
	screen.Fill(background)
	vector.DrawFilledRect(screen, 0, 0, game.Width, game.Height, floor, false)
	for _, w := range game.Walls() {
		x, y := w.Min.X.Float64(), w.Min.Y.Float64()
		vector.DrawFilledRect(screen, float32(x), float32(y),
			float32(w.Max.X.Float64()-x), float32(w.Max.Y.Float64()-y), wallFill, false)
	}
	v.shots = g.Shots(v.shots[:0])
	for _, s := range v.shots {
		x, y := lerp(s.Prev, s.Pos, alpha)
		vector.DrawFilledCircle(screen, x, y, game.ShotRadius, palette[s.Owner%len(palette)], true)
	}
	for i := range g.Players() {
		v.drawPlayer(screen, i, alpha)
	}
	v.drawScores(screen)
	v.drawOverlay(screen)
}

func (v *View) drawPlayer(screen *ebiten.Image, i int, alpha float64) {
	p := v.s.g.Player(i)
	c := palette[i%len(palette)]
	x, y := lerp(p.Prev, p.Pos, alpha)
	if !p.Alive {
		d := float32(game.PlayerRadius) * 0.6
		vector.StrokeLine(screen, x-d, y-d, x+d, y+d, 3, fade(c, 0x80), true)
		vector.StrokeLine(screen, x-d, y+d, x+d, y-d, 3, fade(c, 0x80), true)
		ebitenutil.DebugPrintAt(screen, fmt.Sprintf("%d", (p.RespawnIn+game.Hz-1)/game.Hz), int(x)-3, int(y)+game.PlayerRadius)
		return
	}
	r := float32(game.PlayerRadius)
	vector.DrawFilledCircle(screen, x, y, r, c, true)
	if i == v.s.slot {
		vector.StrokeCircle(screen, x, y, r+3, 2, white, true)
	}
	if p.Shield > 0 {
		vector.StrokeCircle(screen, x, y, r+6, 1.5, shieldRing, true)
	}
	aim := game.AimVec(p.Aim)
	ax, ay := float32(aim.X.Float64()), float32(aim.Y.Float64())
	vector.StrokeLine(screen, x+ax*r*0.5, y+ay*r*0.5, x+ax*(r+10), y+ay*(r+10), 3, white, true)
	const barW = 30
	vector.DrawFilledRect(screen, x-barW/2, y-r-9, barW, 4, healthBack, false)
	vector.DrawFilledRect(screen, x-barW/2, y-r-9, barW*float32(p.Health)/game.MaxHealth, 4, healthFill, false)
}

// drawScores draws the scoreboard in the panel, best first.
func (v *View) drawScores(screen *ebiten.Image) {
	g := v.s.g
	v.order = v.order[:0]
	for i := range g.Players() {
		v.order = append(v.order, i)
	}
	slices.SortStableFunc(v.order, func(a, b int) int {
		pa, pb := g.Player(a), g.Player(b)
		if pa.Kills != pb.Kills {
			return pb.Kills - pa.Kills
		}
		return pa.Deaths - pb.Deaths
	})
	x := game.Width + 12
	ebitenutil.DebugPrintAt(screen, "ARENA        K   D  HITS", x, 10)
	for row, i := range v.order {
		p := g.Player(i)
		y := 34 + row*20
		vector.DrawFilledRect(screen, float32(x), float32(y+3), 10, 10, palette[i%len(palette)], false)
		name := fmt.Sprintf("P%d", i+1)
		switch seat := v.s.seat(i); {
		case i == v.s.slot:
			name += " you"
		case seat != seatPlaying:
			name += " " + seat
		}
		ebitenutil.DebugPrintAt(screen, fmt.Sprintf("%-9s %3d %3d %5d", name, p.Kills, p.Deaths, p.Hits), x+16, y)
	}
	help := "WASD/arrows move\nmouse aims\nclick/space fires"
	ebitenutil.DebugPrintAt(screen, help, x, screenH-60)
}

// drawOverlay draws the network figures in the panel, under the
// scoreboard, where they hide no part of the arena.
func (v *View) drawOverlay(screen *ebiten.Image) {
	st := v.s.step
	ns := v.s.net.Stats()
	var b strings.Builder
	fmt.Fprintf(&b, "frame %d  %s\n", v.s.g.Frame(), st.State)
	fmt.Fprintf(&b, "buffer %.1f of %.1f frames\n", st.Depth, st.Target)
	fmt.Fprintf(&b, "rtt %d ms", ns.RTT.Milliseconds())
	if ns.Status != "" {
		fmt.Fprintf(&b, "  %s", ns.Status)
	}
	fmt.Fprintf(&b, "\nloss up %.1f%% down %.1f%%", 100*ns.LossUp, 100*ns.LossDown)
	if n := v.s.g.Frame() - 1; n >= 0 {
		h, _ := v.s.hashAt(n)
		fmt.Fprintf(&b, "\nhash %016x", h)
	}
	if v.s.err != nil && v.now.Sub(v.s.errAt) < errorShown {
		msg := v.s.err.Error()
		for len(msg) > 0 { // wrapped to the panel
			n := min(len(msg), 34)
			fmt.Fprintf(&b, "\n%s", msg[:n])
			msg = msg[n:]
			if strings.Count(b.String(), "\n") > 9 {
				break
			}
		}
	}
	x, y := game.Width+8, 34+20*v.s.g.Players()+16
	lines := strings.Count(b.String(), "\n") + 1
	vector.DrawFilledRect(screen, float32(x-4), float32(y-2), panelW-8, float32(lines*16+6), overlayBg, false)
	ebitenutil.DebugPrintAt(screen, b.String(), x, y)
}
