package view

import "strings"

// The debug font's glyph size, in pixels.
const (
	glyphW = 6
	glyphH = 16
)

// box is a screen rectangle in pixels: [x0, x1) x [y0, y1).
type box struct{ x0, y0, x1, y1 int }

func (a box) overlaps(b box) bool {
	return a.x0 < b.x1 && b.x0 < a.x1 && a.y0 < b.y1 && b.y0 < a.y1
}

// textBox is where the debug font draws text at (x, y): its widest line
// by its lines, plus pad on every side.
func textBox(text string, x, y, pad int) box {
	w, n := 0, 0
	for l := range strings.Lines(strings.TrimRight(text, "\n")) {
		w, n = max(w, len(strings.TrimSuffix(l, "\n"))), n+1
	}
	return box{x - pad, y - pad, x + w*glyphW + pad, y + max(n, 1)*glyphH + pad}
}

// labels hands out places for entity names on one drawn frame: a name is
// drawn only where it overlaps neither a name already placed nor a panel
// of the HUD, so that names stay readable in a crowd and the figures stay
// clear. Names asked for first win: the view asks for players' before
// NPCs', nearest first.
type labels struct {
	taken []box
	hud   int // the first hud entries of taken are the panels
}

// reset starts a frame with the HUD's panels.
func (l *labels) reset(panels ...box) {
	l.taken = append(l.taken[:0], panels...)
	l.hud = len(panels)
}

// place takes b for a name if it is free, and reports whether it was.
func (l *labels) place(b box) bool {
	for _, t := range l.taken {
		if b.overlaps(t) {
			return false
		}
	}
	l.taken = append(l.taken, b)
	return true
}

// placed returns the number of names placed this frame.
func (l *labels) placed() int { return len(l.taken) - l.hud }
