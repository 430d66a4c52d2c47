package view

import (
	"image/color"

	"github.com/tongbu/tongbu/examples/mmo/world"
	"github.com/tongbu/tongbu/interest"
)

// Colours of the map.
var (
	colOutside = color.RGBA{16, 18, 22, 255}
	colField   = color.RGBA{44, 62, 42, 255}
	colCity    = color.RGBA{92, 84, 72, 255}
	colGrid    = color.NRGBA{150, 160, 150, 70}
	colRange   = color.NRGBA{255, 240, 160, 28}
	colBorder  = color.RGBA{240, 210, 110, 220}
	colSelf    = color.RGBA{255, 255, 255, 255}
	colPanel   = color.RGBA{0, 0, 0, 160}
	colError   = color.RGBA{150, 30, 30, 200}
	colCombat  = color.RGBA{255, 60, 50, 255}
	colLife    = color.RGBA{90, 220, 90, 255}
	colLifeBg  = color.RGBA{60, 20, 20, 255}
	colSkill   = color.RGBA{255, 90, 60, 255}
	colJump    = color.RGBA{200, 230, 255, 255}
	colMarker  = color.RGBA{255, 240, 160, 255}
)

// Colours of entities: by look for NPCs, by camp for players.
var (
	lookColours = map[uint32]color.RGBA{
		world.LookDeer:     {205, 170, 110, 255},
		world.LookWolf:     {160, 160, 175, 255},
		world.LookBoar:     {150, 95, 60, 255},
		world.LookBandit:   {240, 140, 40, 255},
		world.LookMerchant: {250, 210, 80, 255},
		world.LookGuard:    {120, 185, 210, 255},
		world.LookVillager: {215, 205, 175, 255},
	}
	campColours = map[uint8]color.RGBA{
		world.CampHaoqi: {80, 150, 255, 255},
		world.CampEren:  {235, 80, 90, 255},
	}
	colUnknown = color.RGBA{170, 170, 170, 255} // display data not fetched yet
	colPlayer  = color.RGBA{120, 230, 140, 255} // a player of no known camp
)

// entityColour returns how an entity is drawn: players by camp (bots a
// shade darker), NPCs by look, grey until its display data arrives.
func entityColour(v *interest.View) color.RGBA {
	if !v.HasDisplay {
		return colUnknown
	}
	if v.Kind == interest.Player {
		c, ok := campColours[v.Display.Camp]
		if !ok {
			c = colPlayer
		}
		if v.Display.Appearance == world.LookBot {
			c = shade(c, 0.7)
		}
		return c
	}
	if c, ok := lookColours[v.Display.Appearance]; ok {
		return c
	}
	return colUnknown
}

// shade scales a colour's brightness by f.
func shade(c color.RGBA, f float64) color.RGBA {
	s := func(v uint8) uint8 { return uint8(min(255, float64(v)*f)) }
	return color.RGBA{s(c.R), s(c.G), s(c.B), c.A}
}

// fade scales a colour's opacity by f (premultiplied alpha).
func fade(c color.RGBA, f float64) color.RGBA {
	s := func(v uint8) uint8 { return uint8(float64(v) * f) }
	return color.RGBA{s(c.R), s(c.G), s(c.B), s(c.A)}
}
