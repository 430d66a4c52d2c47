// Package game is the duel: a two-player fighting game at 60 frames a
// second, played in tongbu's prediction mode (lockstep.Rollback), made
// small: fighters on a line, walking, blocking, and a jab with the frame data of Kasumi's P in Dead or Alive, 9(2)13:
// nine frames of startup, two active frames that hit, thirteen of
// recovery.
//
// At 60 Hz no round trip fits in a frame, so a client runs ahead of the
// room on predicted input: its own input shows in the next frame, the
// opponent's is guessed to be what it last was, and when the room's frame
// says otherwise the client loads the state before it and runs the frames
// again. The nine frames of startup are why this works (the seed's
// argument): an opponent's jab is seen, corrected, well before it can hit.
//
// # Determinism
//
// The state is integers and lockstep/fixed numbers only, saved whole by
// SaveState (about 90 bytes), so a rollback costs a copy. Both fighters
// move before hits are decided, and hits land together, so the slot order
// never decides a trade. The test suite runs lockstep.SyncTest over bot
// play to keep it so.
package game
