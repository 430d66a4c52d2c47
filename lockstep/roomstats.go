package lockstep

import "time"

// Drop reasons, counted in RoomStats.Dropped.
const (
	DropMalformed = iota // the packet did not decode
	DropSlot             // a slot the room does not have
	DropLate             // an input for a frame already cut (and the room drops late input)
	DropFuture           // an input for a frame too far ahead
	DropTooMany          // more inputs for one frame than the room allows
	DropSize             // an input over the room's size limit
	DropSequence         // an input sequence number out of any plausible window
	DropAck              // an acknowledgement of frames not yet cut
	DropSpectator        // an input from a spectator
	DropAway             // a packet from a player who left
	DropHash             // a hash report for a frame that is not checked, not cut, or reported twice differently
	DropLifecycle        // a lifecycle message that does not decode or was not asked for
	DropEvent            // a game event report that does not decode, or an event for a frame not cut, already reported complete, or over the limits
	numDrops
)

var dropNames = [numDrops]string{"malformed", "slot", "late", "future", "too_many", "size", "sequence", "ack",
	"spectator", "away", "hash", "lifecycle", "event"}

// DropName returns the name of a drop reason, for logs and metrics.
func DropName(reason int) string {
	if reason < 0 || reason >= numDrops {
		return "unknown"
	}
	return dropNames[reason]
}

// RoomStats counts a room's work.
type RoomStats struct {
	Frames      int              // frames cut
	Inputs      uint64           // inputs placed in frames
	MadeUp      uint64           // made-up inputs
	Packets     uint64           // downlink packets sent
	Retransmits uint64           // frames retransmitted beyond the redundant window
	SendErrors  uint64           // sends that failed
	Dropped     [numDrops]uint64 // by reason (DropMalformed ...)
	MaxCutLate  time.Duration    // the latest a frame was cut after its scheduled time
	CatchUp     uint64           // catch-up bytes sent (snapshots included)

	// Strict rooms (Config.Strict).
	Waits   uint64        // waits long enough that the players were told (EventWaiting)
	Waited  time.Duration // time spent waiting for players' inputs, in all
	GivenUp uint64        // players given up on after Config.StrictWait

	// Server-side simulation (Config.Simulation).
	SimFrames        int    // frames the simulation ran
	MaxSimLag        int    // the most frames it was behind the cut after a tick
	SimBehind        uint64 // times it fell over a second of frames behind (EventSimBehind)
	Snapshots        uint64 // snapshots taken for catch-up
	SnapshotFailures uint64 // snapshots too big to send (the frame log went instead)
	ViewOverflow     uint64 // authoritative rooms: state changes left out of a view over its size bound
}

// PlayerStats counts one player's traffic in the room.
type PlayerStats struct {
	Inputs     uint64  // inputs placed in frames
	LateDrops  uint64  // inputs dropped as late
	LateMoved  uint64  // late inputs moved to the next frame
	MadeUp     uint64  // frames in which the room made the player's input up
	Redundancy int     // frames repeated per packet now
	Loss       float64 // estimated downlink packet loss
	Have       int     // frames the player holds contiguously
}
