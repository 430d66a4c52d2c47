package sctp

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/binary"
	"fmt"
	"time"
)

// The association's opening (RFC 9260 §5.1): INIT, INIT-ACK with a state
// cookie that holds everything, COOKIE-ECHO, COOKIE-ACK.

// queueInit queues the client's INIT, sent without this side's tag.
func (a *Assoc) queueInit() {
	a.ctrl = append(a.ctrl, ctrlChunk{tag: 0, chunk: encodeChunk(ctInit, 0, initValue(a.myTag, a.cfg.RecvWindow, a.initTSN, nil)), crc: true})
}

// randNonZero returns a random tag or TSN other than zero.
func randNonZero() uint32 {
	var b [4]byte
	for {
		rand.Read(b[:])
		if v := binary.BigEndian.Uint32(b[:]); v != 0 {
			return v
		}
	}
}

// handleInit answers an INIT with an INIT-ACK whose state cookie holds
// everything the association needs: nothing is kept until COOKIE-ECHO.
func (a *Assoc) handleInit(c Chunk, t time.Duration) error {
	if a.cfg.Client {
		return nil // an INIT collision is not worth supporting here
	}
	in, err := parseInit(c)
	if err != nil {
		return err
	}
	myTag, myTSN := randNonZero(), randNonZero()
	if a.st == stateEstablished {
		myTag, myTSN = a.myTag, a.initTSN
	}
	ck := make([]byte, 0, 64)
	ck = append(ck, 1)
	ck = binary.BigEndian.AppendUint64(ck, uint64(time.Now().UnixMilli()))
	ck = binary.BigEndian.AppendUint32(ck, myTag)
	ck = binary.BigEndian.AppendUint32(ck, myTSN)
	ck = binary.BigEndian.AppendUint32(ck, in.tag)
	ck = binary.BigEndian.AppendUint32(ck, in.tsn)
	ck = binary.BigEndian.AppendUint32(ck, in.rwnd)
	var caps byte
	if in.zeroChecksum {
		caps |= 1
	}
	if in.forwardTSN {
		caps |= 2
	}
	ck = append(ck, caps)
	ck = append(ck, a.mac(ck)...)
	a.answer(ctrlChunk{tag: in.tag, chunk: encodeChunk(ctInitAck, 0, initValue(myTag, a.cfg.RecvWindow, myTSN, ck)), crc: true})
	return nil
}

const cookieLen = 30 + 16

func (a *Assoc) mac(b []byte) []byte {
	m := hmac.New(sha256.New, a.cfg.CookieKey)
	m.Write(b)
	return m.Sum(nil)[:16]
}

func (a *Assoc) handleCookieEcho(c Chunk, hdr Header, t time.Duration) error {
	ck := c.Value
	if len(ck) != cookieLen || ck[0] != 1 || !hmac.Equal(a.mac(ck[:30]), ck[30:]) {
		return fmt.Errorf("%w: bad state cookie", ErrProtocol)
	}
	age := time.Since(time.UnixMilli(int64(binary.BigEndian.Uint64(ck[1:]))))
	myTag := binary.BigEndian.Uint32(ck[9:])
	if age > cookieLife || age < -time.Minute || hdr.VerificationTag != myTag {
		return fmt.Errorf("%w: stale state cookie", ErrProtocol)
	}
	peerTag := binary.BigEndian.Uint32(ck[17:])
	if a.st == stateEstablished {
		if myTag != a.myTag || peerTag != a.peerTag {
			return fmt.Errorf("%w: a second association over the same DTLS", ErrProtocol)
		}
	} else {
		a.myTag, a.peerTag = myTag, peerTag
		a.initTSN = binary.BigEndian.Uint32(ck[13:])
		a.recv.cum = binary.BigEndian.Uint32(ck[21:]) - 1
		a.peerRwnd = int(binary.BigEndian.Uint32(ck[25:]))
		a.peerZero, a.peerFwd = ck[29]&1 != 0, ck[29]&2 != 0
		a.pport, a.port = hdr.SrcPort, hdr.DstPort
		a.establish()
	}
	a.answer(ctrlChunk{tag: a.peerTag, chunk: encodeChunk(ctCookieAck, 0, nil)})
	return nil
}

func (a *Assoc) handleInitAck(c Chunk, t time.Duration) error {
	if a.st != stateCookieWait {
		return nil
	}
	in, err := parseInit(c)
	if err != nil {
		return err
	}
	if len(in.cookie) == 0 {
		return fmt.Errorf("%w: INIT-ACK without a cookie", ErrProtocol)
	}
	a.peerTag = in.tag
	a.recv.cum = in.tsn - 1
	a.peerRwnd = int(in.rwnd)
	a.peerZero, a.peerFwd = in.zeroChecksum, in.forwardTSN
	a.cookie = append([]byte(nil), in.cookie...)
	a.ctrl = append(a.ctrl[:0], ctrlChunk{tag: a.peerTag, chunk: encodeChunk(ctCookieEcho, 0, a.cookie), crc: true})
	a.st = stateCookieEchoed
	a.t1count = 0
	a.t1 = t + a.rto
	return nil
}

func (a *Assoc) establish() {
	a.st = stateEstablished
	a.t1 = 0
	a.nextTSN = a.initTSN
	a.cumAck = a.initTSN - 1
	a.advAck = a.cumAck
	a.cookie = nil
}
