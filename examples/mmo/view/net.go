// Package view is the player's window on the interest-mode MMO demo: an
// Ebiten game (built for the browser only, js/wasm) that draws the map
// around the player, the region grid and the player's 3x3 range, every
// entity its interest.Client knows, and an overlay of the session's
// figures; the player moves with WASD, the arrow keys or a click.
//
// The view reaches the network only through Net, which the engine
// implements over its WebRTC client; Local implements it in process, over
// the demo world, for the offline mode and for tests. Net, Local and the
// view's arithmetic build everywhere; the Ebiten game is in the files
// tagged js.
package view

import (
	"time"

	"github.com/tongbu/tongbu/interest"
)

// Net is the interest session a View plays through. The view calls it from
// Ebiten's update only, once per tick (60 a second), in this order: it
// reads the client, gives it the player's commands (Client.Move, Jump,
// Skill), then calls Update.
type Net interface {
	// Client returns the session's mode client: the view reads the
	// player's entity (Self) and every entity it knows (Each, Frame,
	// Stats) and gives it the player's commands. It must not be nil.
	Client() *interest.Client
	// Player returns the player's own entity, the one the client was
	// made for (interest.NewClient's self).
	Player() interest.ID
	// Config returns the world's configuration, defaults filled in: the
	// one the world was made with. It may change when the player moves to
	// another world; the view follows it. For the demo that is
	// world.InterestConfig, whose City function the view uses to draw the
	// cities (City is not sent on the wire: the lead's Net fills it in
	// with world.InterestConfig).
	Config() interest.Config
	// Update runs the session up to now: it sends the uplink the client
	// has (Client.Packet: the player's commands, requests and
	// acknowledgements), hands the client every packet received since the
	// last call (Client.Deliver), and advances it (Client.Advance(now)).
	// An error is shown in the overlay; the view keeps running and calls
	// Update again next tick.
	Update(now time.Time) error
	// Stats returns the transport's figures, which the client cannot
	// know.
	Stats() NetStats
}

// NetStats is what the transport knows of the session.
type NetStats struct {
	// Where names the world and the server the session is on, for a game
	// whose worlds span processes (the player moves between them); empty
	// when there is only one.
	Where string
	// Status is a word or two on the session: "connecting",
	// "connected", "offline"...
	Status string
	// RTT is the round-trip time to the server, 0 when unknown.
	RTT time.Duration
	// BytesIn and BytesOut count the bytes received and sent on the wire
	// since the session began, transport headers included, or 0 when the
	// transport does not count them. The view shows their rates beside
	// the payload rates it takes from the client's own counters.
	BytesIn, BytesOut int64
}
