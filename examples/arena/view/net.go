// Package view is the arena's Ebiten front end: it draws the game,
// interpolating between frames, reads the local player's keys and mouse
// into a game.Input, and shows an overlay of the frame number, the playout
// state and buffer depth, the round-trip time and the loss.
//
// The view reaches the network only through Net, so it runs the same over
// the engine's WebRTC client in a browser and over an in-process room
// (examples/arena/local) offline. Everything that uses Ebiten or
// syscall/js is built for GOOS=js only; Net and the session logic build
// everywhere, so they are tested on every platform.
package view

import (
	"time"

	"github.com/tongbu/tongbu/lockstep"
)

// Net is the lockstep session the view plays through. The view calls it
// from its game loop only (never concurrently), with the time of the tick.
//
// On every tick (60 a second) the view calls Update once and runs the
// frames of the returned step in order, then calls Send if the local
// input changed and at least one frame has run since the last Send (at
// most one input a frame, whatever the render rate). The game keeps a
// player's last input until a new one arrives, so inputs are sent only on
// change, and a room may fill missing inputs with any lockstep.Fill.
type Net interface {
	// Slot returns the local player's slot, 0 to Players()-1.
	Slot() int
	// Players returns the number of slots in the room (game.MinPlayers to
	// game.MaxPlayers); bots hold the slots no person does.
	Players() int
	// Send hands the local player's input, an encoded game.Input, to the
	// lockstep client (lockstep.Client.Input) and sends it now.
	Send(now time.Time, in []byte) error
	// Update takes in what has arrived and returns the playout step for
	// this tick (lockstep.Client.Advance): the frames to run, Alpha, the
	// play state and the buffer depth. A non-nil error is shown on the
	// overlay; the view still runs the step's frames and keeps calling.
	Update(now time.Time) (lockstep.Step, error)
	// Stats returns the link's figures for the overlay.
	Stats() NetStats
}

// NetStats are the link figures the overlay shows.
type NetStats struct {
	RTT      time.Duration // round-trip time; 0 when not known
	LossUp   float64       // fraction of uplink packets lost recently, 0 to 1
	LossDown float64       // fraction of downlink packets lost recently, 0 to 1
	Status   string        // a word or two on the connection ("connected", "offline")
}

// HashReporter is implemented by a Net that passes state hashes on to the
// room for desync detection (lockstep.Client.ReportHash): the view hands
// it the hash after every frame it runs.
type HashReporter interface {
	ReportHash(frame int, hash uint64)
}

// SeatReporter is implemented by a Net that knows what the room says of
// each slot (engine.Client.Seats): "open", "playing", "late" or "gone",
// or "" before the room has said. Without it the view tells from the
// frames alone, which cannot show a late player.
type SeatReporter interface {
	Seat(slot int) string
}

// EventReporter is implemented by a Net that passes the game's events on
// to the room for event verification (lockstep.Client.ReportEvent): the
// view hands it every event of every frame it runs.
type EventReporter interface {
	ReportEvent(frame int, data []byte)
}
