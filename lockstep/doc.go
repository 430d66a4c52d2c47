// Package lockstep is tongbu's frame-sync mode: a relay that cuts the
// players' inputs into numbered frames, and the client half that plays
// them.
//
// A Room is the relay: it cuts frame n at start + n/Hz (a frame is a
// number; timers only decide when to cut it), puts in every input that
// arrived for it, makes up input for players who sent none (idle,
// repeat-last or absent, per room), and sends each player the newest frames
// over the unreliable channel with redundancy that adapts to the player's
// loss, acknowledgements, and retransmission from the match's frame log.
// Inputs that arrive after their frame was cut are dropped or moved to the
// next frame, and the client is told.
//
// A Client is the player's half: it stamps inputs with the frame they will
// reach the room for, learned from the room's reports of how early inputs
// arrive; repeats them until acknowledged; reassembles the frame sequence;
// and plays it out through a JitterBuffer, which keeps the playout just
// behind the earliest arrivals by the delay variation it measures (its mean
// and the third-highest recent delay event, plus a margin) and plays
// normal, fast, slow (never under SlowestPlay, 0.75x) or pauses. The game
// calls Client.Advance on every render tick and runs the frames it returns,
// interpolating by Alpha, at its own frame rate.
//
// # Two ways to play: waiting or predicting
//
// The plain Client runs only the room's frames: every player sees the same
// frame at about the same time, and a player sees its own input a round
// trip plus the playout delay after pressing (100-200 ms on a normal
// link). That suits games at 10 to 20 frames a second whose commands take
// effect with some animation anyway: strategy, MOBA, co-op, the arena
// example.
//
// Rollback is the prediction mode, for games where a frame of lag is
// felt, such as fighting games at 60 Hz (the duel example). The player's
// own input shows in the next frame; the others' inputs are guessed (by
// default, what they last were) and corrected when the room's frames
// arrive: the session loads the state saved before the first wrong frame
// and runs the frames again, all within one render tick. The game must
// save and load its whole state cheaply (RollbackGame) and be exactly
// deterministic through that; SyncTest checks it with no network. The
// room is the same relay, the timekeeper: it still cuts frames on its
// schedule and fills in late players, and its frames are the truth that
// desync detection, replays and reconnection use. MaxPrediction bounds how
// far a client runs ahead on guesses, and InputDelay trades a frame or two
// of response for shallower rollbacks.
//
// # Strict rooms
//
// A room cuts on its own clock by default: a player whose input is late
// has it made up (or moved to the next frame), so one slow player never
// slows the others. A strict room (Config.Strict) instead cuts a frame
// only when every live player's input for it is in: each client says,
// with every packet, the first frame it may still send an input for, and
// the room waits for the last of them, its clock stopped. After a short
// wait the clients are told whom they wait for (Step.WaitingFor); after
// Config.StrictWait the room plays on without that player until it is in
// time again. Spectators, replays, reconnection, desync detection and the
// prediction mode work in strict rooms as in others.
//
// A room can also run the game itself (Config.Simulation): its hash is
// then the reference for desync detection, and a Snapshotter lets a
// rejoining player catch up from a snapshot instead of the frame log.
// With Config.VerifyEvents clients report the game events they see
// (Client.ReportEvent); the room compares them frame by frame, names who
// disagrees (EventVerdict) and gives the agreed result (Room.Result). In
// an authoritative room (Config.Authoritative) the room sends each player
// only the state changes its Authority lets it see, frame by frame.
//
// Both halves are driven by explicit calls with the time, so tests and
// simulations run them with no network and no real clock. The package
// depends on codec only; it reaches players through the small Sender
// interface, and records a match through the small Recorder interface
// (Room.Record), which the replay file writer of package lockstep/replay
// implements. The package examples show a room with its clients (Example),
// a verified room (Example_verifiedRoom) and the prediction mode
// (Example_rollback). A Room is not safe for concurrent use: the engine runs each
// on one worker at a time, many rooms sharing a few goroutines. The wire is
// in SPEC.md, section 7.
package lockstep
