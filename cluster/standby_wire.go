//go:build !js

package cluster

import (
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/tongbu/tongbu/codec"
	"github.com/tongbu/tongbu/engine"
	"github.com/tongbu/tongbu/lockstep"
)

// The standby stream's messages (SPEC.md §11.4): batches of frames in
// the codec's bits, control messages in JSON.

// standbyControl is a control message, on the stream (a room's
// announcement, its end, a take-over told) or as a request (the steps of
// a hand-over, a question to a silent primary).
type standbyControl struct {
	// Rooms: "room", "drop", "prepare", "parked", "cancel", "handover",
	// "taken", "ask", "resign"; worlds (worldheir.go, worldmove.go):
	// "world", "wdrop", "wprepare", "wparked", "wcancel", "whandover", and
	// "taken", "ask", "resign" as for rooms. Room names the room or world.
	Op     string              `json:"op"`
	Room   string              `json:"room"`
	Config json.RawMessage     `json:"config,omitempty"`
	Seats  []engine.SeatRecord `json:"seats,omitempty"`
	Next   int                 `json:"next,omitempty"` // handover: the frames cut
	URL    string              `json:"url,omitempty"`
	Cap    int                 `json:"cap,omitempty"`        // world, wprepare: the world's cap
	Start  int64               `json:"start_ns,omitempty"`   // wprepare: the world's frame 0
	Rev    uint64              `json:"rev,omitempty,string"` // whandover: the revision of the record handed over
	Point  []byte              `json:"checkpoint,omitempty"` // whandover without a bucket: the checkpoint itself
}

type standbyReply struct {
	OK     bool   `json:"ok"`
	Error  string `json:"error,omitempty"`
	Parked int    `json:"parked,omitempty"` // "parked": the connections parked at the prepared room
}

// standbyAck is a standby's acknowledgement: the rooms whose log it
// lacks the start of (a standby that restarted, a batch lost), for the
// primary to send whole again.
type standbyAck struct {
	Resend []string `json:"resend,omitempty"`
}

func (c *standbyControl) validate() error {
	if err := checkRoom(c.Room); err != nil {
		return err
	}
	if len(c.Config) > maxConfig || len(c.Seats) > lockstep.MaxPlayers || len(c.URL) > maxURLLen || c.Cap < 0 || c.Cap > MaxWorldPlayers {
		return fmt.Errorf("%w: standby message of %d config bytes, %d seats", ErrInvalid, len(c.Config), len(c.Seats))
	}
	for _, rec := range c.Seats {
		if rec.Slot < 0 || rec.Slot >= lockstep.MaxPlayers || rec.Player == "" || len(rec.Player) > engine.MaxNameLen {
			return fmt.Errorf("%w: seat %+v", ErrInvalid, rec)
		}
	}
	return nil
}

func (r *standbyReply) validate() error {
	if len(r.Error) > 1024 {
		r.Error = r.Error[:1024]
	}
	return nil
}

func (a *standbyAck) validate() error {
	if len(a.Resend) > MaxCapacity {
		return fmt.Errorf("%w: %d rooms to resend", ErrInvalid, len(a.Resend))
	}
	return nil
}

// Stream message kinds: the first byte of a message on the stream
// subject, which keeps a room's announcement and its frames in order.
const (
	streamBatch   = 0
	streamControl = 1
)

func (o *Options) subjStream(to string) string  { return o.Prefix + ".sb." + to }
func (o *Options) subjControl(to string) string { return o.Prefix + ".sbc." + to }
func (o *Options) subjAck(to string) string     { return o.Prefix + ".sba." + to }

// appendBatchRoom writes one room's new frames to a stream batch
// (SPEC.md §11.4): its name, its schedule's start, the first frame's
// number, the count, and each frame's full body as a bit count and the
// bits.
func appendBatchRoom(w *codec.Writer, name string, start time.Time, frames []lockstep.EncodedFrame) {
	w.WriteString(name, MaxRoomLen)
	w.WriteVarint(start.UnixNano())
	w.WriteUvarint(uint64(frames[0].Number))
	w.WriteUvarint(uint64(len(frames)))
	for _, f := range frames {
		w.WriteUvarint(uint64(f.FullBits))
		w.WriteBitString(f.Full, f.FullBits)
	}
}

// batchMessage returns the stream message of a batch of rooms rooms
// written by appendBatchRoom to w.
func batchMessage(rooms int, w *codec.Writer) []byte {
	head := codec.NewWriter(nil)
	head.WriteBits(streamBatch, 8)
	head.WriteUvarint(uint64(rooms))
	head.WriteBitString(w.Bytes(), w.Len())
	return head.Bytes()
}

// maxBodyBits bounds a frame body in a batch.
const maxBodyBits = 1 << 20

// readBatch reads a stream batch, handing each frame to f with its
// room's name and start; it stops at the first thing that is no batch.
func readBatch(msg []byte, f func(name string, start int64, fr lockstep.EncodedFrame)) error {
	r := codec.NewReader(msg)
	if r.ReadBits(8) != streamBatch {
		return fmt.Errorf("%w: not a stream batch", ErrInvalid)
	}
	rooms := int(min(r.ReadUvarint(), maxStandbyRooms))
	for range rooms {
		name := r.ReadString(MaxRoomLen)
		start := r.ReadVarint()
		first, n := r.ReadUvarint(), r.ReadUvarint()
		switch {
		case r.Err() != nil:
		case checkRoom(name) != nil:
			r.Fail(fmt.Errorf("room name %q", name))
		case first > maxStandbyFrames || n > maxStandbyFrames-first:
			r.Fail(fmt.Errorf("frames %d to %d of a room", first, first+n))
		}
		if r.Err() != nil {
			break
		}
		for i := range int(n) {
			bits := int(min(r.ReadUvarint(), maxBodyBits))
			if r.Err() != nil || bits > r.Remaining() {
				r.Fail(errors.New("a frame body past the batch's end"))
				break
			}
			body := make([]byte, (bits+7)/8)
			for j := 0; j < bits; j += 8 {
				body[j/8] = byte(r.ReadBits(min(8, bits-j)))
			}
			f(name, start, lockstep.EncodedFrame{Number: int(first) + i, Full: body, FullBits: bits})
		}
	}
	if err := r.Err(); err != nil {
		return fmt.Errorf("%w: stream batch: %v", ErrInvalid, err)
	}
	return nil
}
