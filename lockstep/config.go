package lockstep

import (
	"fmt"
	"strconv"
	"time"

	"github.com/tongbu/tongbu/codec"
)

// Protocol-wide bounds: the wire widths below depend on them, not on a
// room's configuration, so a packet decodes the same way everywhere.
const (
	MaxPlayers        = 32  // players in a room
	MaxInputBytes     = 255 // bytes in one input
	MaxInputsPerFrame = 16  // inputs one player may put in one frame
	MaxRedundancy     = 12  // previous frames repeated in a downlink packet
	maxUplinkInputs   = 32  // unacknowledged inputs repeated in an uplink packet
	maxRetransmits    = 31  // retransmitted frames in one downlink packet
	maxAckMask        = 63  // frames acknowledged beyond the contiguous ones
	maxMarginMs       = 1023
	maxPacketBytes    = codec.MaxPacket // the unreliable channel's limit
	maxHashEvery      = 1 << 16
	// MaxSubsteps bounds Config.Substeps.
	MaxSubsteps = 16
	// DefaultMaxDelay is Config.MaxDelay's default.
	DefaultMaxDelay = 300 * time.Millisecond
	maxMaxDelay     = time.Minute
	// DefaultStrictWait is how long a strict room waits for a player
	// (Config.StrictWait).
	DefaultStrictWait = 10 * time.Second
	maxStrictWait     = 10 * time.Minute
)

// Fill says what the room puts in a frame for a player who sent no input
// for it. The frame marks the input as made up either way.
type Fill uint8

const (
	// FillIdle makes up an empty input: the player did nothing.
	FillIdle Fill = iota
	// FillRepeat makes up a copy of the player's previous input (a held
	// direction stays held).
	FillRepeat
	// FillAbsent marks the player absent, with no input, late or gone
	// alike: the game decides (Slot.Gone tells a player who left from one
	// who is late, and a gone one is handed to the game's bot under any
	// Fill).
	FillAbsent
)

func (f Fill) String() string {
	switch f {
	case FillIdle:
		return "idle"
	case FillRepeat:
		return "repeat-last"
	case FillAbsent:
		return "absent"
	}
	return fmt.Sprintf("Fill(%d)", uint8(f))
}

// Late says what the room does with an input whose frame is already cut.
type Late uint8

const (
	// LateDrop drops it and tells the client.
	LateDrop Late = iota
	// LateNextFrame applies it to the next frame to be cut and tells the
	// client which frame that was.
	LateNextFrame
)

// Start says when a room hosted by engine.Server cuts frame 0.
type Start uint8

const (
	// StartFirstPlayer, the default, starts the room when its first
	// player arrives: no one inherits frames cut for an empty room.
	StartFirstPlayer Start = iota
	// StartAllPlayers starts it when every one of its Players has
	// arrived, for a match that must not begin without all of them.
	StartAllPlayers
	// StartAtOnce starts it when it is created, as a room that runs on a
	// clock of its own whoever is there.
	StartAtOnce
)

// String returns the policy's name in tongbu serve's config ("first",
// "all", "created").
func (s Start) String() string {
	switch s {
	case StartFirstPlayer:
		return "first"
	case StartAllPlayers:
		return "all"
	case StartAtOnce:
		return "created"
	}
	return "Start(" + strconv.Itoa(int(s)) + ")"
}

// Config describes a room. Both halves must use the same one: the client
// receives it when it joins.
type Config struct {
	Players int  // 1 to MaxPlayers (default 10)
	Hz      int  // frames per second (default 15, as Honor of Kings)
	Fill    Fill // made-up input for a player who sent none
	Late    Late // what happens to an input for a frame already cut

	// InputBytes bounds one input (default 32, at most MaxInputBytes).
	InputBytes int
	// InputsPerFrame bounds one player's inputs in one frame (default 4).
	InputsPerFrame int
	// Redundancy is the initial number of previous frames repeated in
	// every downlink packet (default 3); it adapts per player to its loss,
	// between Redundancy and MaxRedundancy.
	Redundancy int
	// MaxAhead bounds how far ahead of the next cut an input may target
	// (default 2 s of frames); inputs beyond are dropped as from the future.
	MaxAhead int

	// Substeps is how many logic frames the game runs for each frame the
	// room cuts, for the whole match (default 1; at most MaxSubsteps):
	// the client FPS extension. A room at 15 Hz with Substeps 4
	// relays 15 frames a second and the game steps 60: the client hands
	// each relay frame to the game as Substeps logic frames, numbered
	// LogicFrame(n) .. LogicFrame(n+1)-1 and spread over the frame period
	// as they play. The inputs are in the first; the others carry none,
	// or repeat them with SubstepRepeat. Everything the game sees counts
	// logic frames: Frame.Number, Step.SnapshotFrame, the frames of
	// ReportHash, ReportEvent and DumpRequests (HashFrame says which to
	// hash); the wire, the room and replays count relay frames.
	Substeps int
	// SubstepRepeat puts a frame's inputs in every logic frame of it, not
	// only the first.
	SubstepRepeat bool

	// MaxDelay bounds the frames a client's jitter buffer holds, as time
	// (default 300 ms; -1 for no bound): the players' latency tolerance. On a
	// link so jittery that the buffer would hold more, play pauses for the
	// worst delays instead, and a backlog above it (after a spike) is
	// played fast until it is under it. A link whose delay steps up keeps
	// its buffer: the bound is on what is held beyond the newest frame, not
	// on the delay.
	//
	// The default favours fewer stalls. A game that wants most frames
	// shown within a latency budget sets it lower: on a mobile link (30 ms
	// one way with about 15 ms of jitter and 1% loss), 130 ms plays 96% of
	// frames within 150 ms of their cut, against 90-93% at the default,
	// with the same stalls; on a lossy or bursty link it stalls more
	// (`tongbu bench jitter -max-delay`, `bench loss`).
	MaxDelay time.Duration

	// HashEvery is how often clients report a hash of their state, in
	// frames: after running every frame whose number is a multiple of it
	// (default 15; -1 turns desync detection off).
	HashEvery int
	// DumpOnDesync makes the room ask the diverging clients and one
	// agreeing client for a state dump when it detects a desync.
	DumpOnDesync bool
	// CatchUpBytes bounds the catch-up bytes (frames streamed from the log
	// to a rejoining player or a late spectator) the room sends per tick,
	// over all its catch-up streams (default 32 KiB: about 480 KB/s at
	// 15 Hz).
	CatchUpBytes int

	// Simulation, when set, makes the room run the game itself
	// (server-side simulation): NewRoom calls it once, and the room steps
	// the simulation through every frame it cuts, after sending the frame,
	// at most SimStepsPerTick frames per Tick, so a slow simulation falls
	// behind (EventSimBehind) rather than delaying a cut. Its hash is the
	// reference for desync detection: a client whose hash differs from it
	// is named even with two players. When it also implements Snapshotter,
	// a rejoining player is sent a snapshot of it and the frames after,
	// instead of the whole frame log. Server-side only: the client half
	// ignores it.
	Simulation func() Simulation
	// SimStepsPerTick bounds the frames the server-side simulation runs in
	// one Tick (0 means 8; a room cuts one frame per tick when on time).
	// Server-side only, like Simulation.
	SimStepsPerTick int
	// VerifyEvents makes clients report game events (Client.ReportEvent)
	// and the room compare every player's events frame by frame: see Room.Result.
	VerifyEvents bool
	// Authoritative makes the room send each player, instead of the
	// inputs, the state changes its simulation (an Authority) computed
	// for the entities the player may see. Clients still
	// advance frame by frame, applying Frame.Changes; they report no
	// hashes. Spectators are refused, and a rejoining player is streamed
	// its own view from frame 0 (a snapshot would show it everything).
	Authoritative bool
	// Start is when the room cuts frame 0, for its host to apply: an
	// engine.Server room waits (cutting nothing, making up no input)
	// until its first player arrives by default. A Room made with NewRoom
	// itself starts at the time it is given; StartAt moves that. Clients
	// are not told: they see frames when they come.
	Start Start

	// Strict makes the room wait for every player: a frame is cut only
	// when each live player's input for it is in (each client says,
	// with every packet, the first frame it may still send an input
	// for), so no input is ever made up for a player who is merely slow.
	// While the room waits, its clock stops: clients are told whom they
	// wait for (Step.WaitingFor) and their frames' schedule moves by the
	// wait. A player waited for longer than StrictWait is given up on: its
	// input is made up, as for a late player, until it is in time again.
	// On a steady link it costs up to a frame of input delay. Spectators,
	// players catching up and players who left are not waited for.
	Strict bool
	// StrictWait bounds how long a strict room waits for one player
	// before it plays on without it (default 10 s): one player cannot
	// hold a match for ever.
	StrictWait time.Duration
}

// WithDefaults returns c with zero fields set to their defaults.
func (c Config) WithDefaults() Config {
	if c.Players == 0 {
		c.Players = 10
	}
	if c.Hz == 0 {
		c.Hz = 15
	}
	if c.InputBytes == 0 {
		c.InputBytes = 32
	}
	if c.InputsPerFrame == 0 {
		c.InputsPerFrame = 4
	}
	if c.Redundancy == 0 {
		c.Redundancy = 3
	}
	if c.MaxAhead == 0 {
		c.MaxAhead = 2 * c.Hz
	}
	if c.HashEvery == 0 {
		c.HashEvery = 15
	}
	if c.MaxDelay == 0 {
		c.MaxDelay = DefaultMaxDelay
	}
	if c.Substeps == 0 {
		c.Substeps = 1
	}
	if c.CatchUpBytes == 0 {
		c.CatchUpBytes = 32 << 10
	}
	if c.StrictWait == 0 {
		c.StrictWait = DefaultStrictWait
	}
	return c
}

// Validate reports a configuration that cannot work.
func (c Config) Validate() error {
	switch {
	case c.Players < 1 || c.Players > MaxPlayers:
		return fmt.Errorf("%w: %d players, want 1 to %d", ErrConfig, c.Players, MaxPlayers)
	case c.Hz < 1 || c.Hz > MaxHz:
		return fmt.Errorf("%w: %d Hz, want 1 to %d", ErrConfig, c.Hz, MaxHz)
	case c.Fill > FillAbsent:
		return fmt.Errorf("%w: fill %d", ErrConfig, c.Fill)
	case c.Late > LateNextFrame:
		return fmt.Errorf("%w: late policy %d", ErrConfig, c.Late)
	case c.InputBytes < 1 || c.InputBytes > MaxInputBytes:
		return fmt.Errorf("%w: input bytes %d, want 1 to %d", ErrConfig, c.InputBytes, MaxInputBytes)
	case c.InputsPerFrame < 1 || c.InputsPerFrame > MaxInputsPerFrame:
		return fmt.Errorf("%w: inputs per frame %d, want 1 to %d", ErrConfig, c.InputsPerFrame, MaxInputsPerFrame)
	case c.Redundancy < 0 || c.Redundancy > MaxRedundancy:
		return fmt.Errorf("%w: redundancy %d, want 0 to %d", ErrConfig, c.Redundancy, MaxRedundancy)
	case c.MaxAhead < 1:
		return fmt.Errorf("%w: max ahead %d frames", ErrConfig, c.MaxAhead)
	case c.Substeps < 1 || c.Substeps > MaxSubsteps:
		return fmt.Errorf("%w: %d substeps, want 1 to %d", ErrConfig, c.Substeps, MaxSubsteps)
	case c.Substeps > 1 && c.Authoritative:
		return fmt.Errorf("%w: an authoritative room sends state per relay frame: no substeps", ErrConfig)
	case c.MaxDelay != -1 && (c.MaxDelay < time.Millisecond || c.MaxDelay > maxMaxDelay):
		return fmt.Errorf("%w: max delay %v, want 1 ms to %v, or -1", ErrConfig, c.MaxDelay, maxMaxDelay)
	case c.HashEvery < -1 || c.HashEvery == 0 || c.HashEvery > maxHashEvery:
		return fmt.Errorf("%w: hash every %d frames, want 1 to %d or -1", ErrConfig, c.HashEvery, maxHashEvery)
	case c.CatchUpBytes < catchUpChunkBytes+1024:
		return fmt.Errorf("%w: catch-up bytes %d per tick, want at least %d", ErrConfig, c.CatchUpBytes, catchUpChunkBytes+1024)
	case c.StrictWait < 10*time.Millisecond || c.StrictWait > maxStrictWait:
		return fmt.Errorf("%w: strict wait %v, want 10 ms to %v", ErrConfig, c.StrictWait, maxStrictWait)
	case c.Start > StartAtOnce:
		return fmt.Errorf("%w: start policy %d", ErrConfig, c.Start)
	case c.SimStepsPerTick < 0 || c.SimStepsPerTick > 1<<16:
		return fmt.Errorf("%w: %d simulation steps per tick, want 1 to %d", ErrConfig, c.SimStepsPerTick, 1<<16)
	}
	return nil
}

// configKey is a Config's comparable part: all but Simulation.
type configKey struct {
	players, hz                               int
	fill                                      Fill
	late                                      Late
	inputBytes, inputsPerFrame, redundancy    int
	maxAhead, hashEvery, catchUpBytes, stepsT int
	maxDelay                                  time.Duration
	substeps                                  int
	dump, events, sim, auth, repeat           bool
	strict                                    bool
	strictWait                                time.Duration
}

// key returns c's comparable part (whether a simulation is set, not which).
func (c Config) key() configKey {
	return configKey{c.Players, c.Hz, c.Fill, c.Late, c.InputBytes, c.InputsPerFrame, c.Redundancy,
		c.MaxAhead, c.HashEvery, c.CatchUpBytes, c.SimStepsPerTick, c.MaxDelay, c.Substeps, c.DumpOnDesync, c.VerifyEvents, c.Simulation != nil, c.Authoritative, c.SubstepRepeat, c.Strict, c.StrictWait}
}

// Period returns the time between two frames.
func (c Config) Period() time.Duration { return c.cutOffset(1) }

// cutTime returns when frame n is cut, counted from start without drift:
// start + n/Hz, computed exactly rather than by adding periods.
func (c Config) cutTime(start time.Time, n int) time.Time {
	return start.Add(c.cutOffset(n))
}

// cutOffset is when frame n is cut, from the room's start.
func (c Config) cutOffset(n int) time.Duration {
	return time.Duration(int64(n) * int64(time.Second) / int64(c.Hz))
}

// cutMs is when frame n is cut at hz frames a second, in milliseconds
// from the room's start, as a float: the clients' clock estimates and the
// jitter buffer count in these. cutMs(1, hz) is the period.
func cutMs(n, hz int) float64 { return float64(n) * 1000 / float64(hz) }

// LogicFrame returns the first logic frame of relay frame n (Substeps).
func (c Config) LogicFrame(n int) int { return n * max(c.Substeps, 1) }

// RelayFrame returns the relay frame logic frame l belongs to.
func (c Config) RelayFrame(l int) int { return l / max(c.Substeps, 1) }

// HashFrame reports whether the room wants a hash of the game's state
// after logic frame l (Client.ReportHash): after the last logic frame of
// every HashEvery-th relay frame. Without substeps, every frame whose
// number is a multiple of HashEvery.
func (c Config) HashFrame(l int) bool {
	n := max(c.Substeps, 1)
	return c.HashEvery > 0 && l >= 0 && (l+1)%n == 0 && (l/n)%c.HashEvery == 0
}

// Expand appends the logic frames of relay frame f to dst, as clients run
// them: f itself without substeps; else Substeps frames numbered from
// LogicFrame(f.Number), the first with f's inputs and the others with
// none (or, with SubstepRepeat, the same inputs again). A replay is
// re-run through these.
func (c Config) Expand(dst []Frame, f Frame) []Frame {
	n := max(c.Substeps, 1)
	if n == 1 {
		return append(dst, f)
	}
	first := f.Number * n
	f.Number = first
	dst = append(dst, f)
	var quiet []Slot
	if !c.SubstepRepeat {
		quiet = make([]Slot, len(f.Slots)) // no inputs, not made up
	}
	for k := 1; k < n; k++ {
		g := Frame{Number: first + k, Slots: f.Slots}
		if quiet != nil {
			g.Slots = quiet
		}
		dst = append(dst, g)
	}
	return dst
}
