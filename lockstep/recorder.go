package lockstep

// Recorder keeps a record of a match as the room plays it (Room.Record):
// the frames the room cuts, its comparisons of the players' state hashes,
// the players leaving and joining, and the dumps they send after a
// desync. A replay file's writer (package lockstep/replay) is one. The
// room calls it on its own goroutine, as it runs.
type Recorder interface {
	// Config returns the room configuration the recording is for: the
	// room refuses a recorder whose configuration is not its own.
	Config() Config
	// RecordFrame takes the next frame the room cut, in order from
	// frame 0.
	RecordFrame(f EncodedFrame)
	// RecordCheck takes the room's comparison of the hashes the players
	// reported for a frame, once the room has made it.
	RecordCheck(c HashCheck)
	// RecordJoin: the player in slot joined (or rejoined) when frame was
	// the next frame to cut.
	RecordJoin(slot, frame int)
	// RecordLeave: the player in slot left when frame was the next frame
	// to cut.
	RecordLeave(slot, frame int)
	// RecordDump takes what the player in slot sent when the room asked
	// it, after a desync, for a dump of its state after frame (its state,
	// its log lines, as the game chose: Client.Dump); agrees says whether
	// the player agreed with the majority. data is valid only during the
	// call.
	RecordDump(slot, frame int, agrees bool, data []byte)
}

// EncodedFrame is a frame as the room encodes it for its clients (SPEC.md
// section 7.2, "A frame body"): in full, and relative to the frame before
// (where a player's inputs that repeat the frame before cost two bits).
// Each is a bit string: the bytes, and how many bits of them count, as
// codec.Writer.WriteBitString takes them. ReadFrame decodes either. The
// bytes are the room's: valid only during the call that hands them over.
type EncodedFrame struct {
	Number   int
	Full     []byte
	FullBits int
	Rel      []byte
	RelBits  int
}

// HashCheck is the room's comparison of the state hashes players reported
// for one frame (after running it).
type HashCheck struct {
	Frame    int
	Majority bool   // a majority agreed on Hash
	Hash     uint64 // the majority's hash
	Agree    uint32 // bit i: player i reported Hash
	Others   []PlayerHash
}

// PlayerHash is one player's hash that differed from the majority.
type PlayerHash struct {
	Slot int
	Hash uint64
}

// encoded returns the frame as a recorder takes it.
func (cf *cutFrame) encoded() EncodedFrame {
	return EncodedFrame{Number: cf.Number, Full: cf.full, FullBits: cf.fullBits, Rel: cf.rel, RelBits: cf.relBits}
}

// recorded returns comparison c, resolved as res, as a recorder takes it:
// the dissenting reporters' hashes in slot order.
func recorded(c *hashCheck, res checkResult) HashCheck {
	hc := HashCheck{Frame: c.frame, Agree: res.agree, Majority: res.support > 0}
	if hc.Majority {
		hc.Hash = res.hash
	}
	if others := c.reported &^ res.agree; others != 0 {
		hc.Others = make([]PlayerHash, 0, bitsCount(others))
		for i := range MaxPlayers {
			if others&(1<<i) != 0 {
				hc.Others = append(hc.Others, PlayerHash{Slot: i, Hash: c.hashes[i]})
			}
		}
	}
	return hc
}
