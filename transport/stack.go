package transport

import "fmt"

// Stack is a server's WebRTC implementation. Both serve the same clients,
// the same SDP and the same two channels.
type Stack uint8

const (
	// StackLean, the default, serves every peer from one UDP socket with
	// no goroutine per peer: ICE lite, DTLS records sealed and opened
	// inline once pion/dtls has done the handshake, and tongbu's own
	// sans-IO SCTP. Datagrams are read and sent in batches.
	StackLean Stack = iota
	// StackPion runs a pion PeerConnection per peer: the reference and
	// fallback. Every message crosses several of its goroutines.
	StackPion
)

func (s Stack) String() string {
	switch s {
	case StackPion:
		return "pion"
	case StackLean:
		return "lean"
	}
	return fmt.Sprintf("Stack(%d)", uint8(s))
}

// ParseStack reads a stack's name, as String writes it.
func ParseStack(name string) (Stack, error) {
	switch name {
	case "pion":
		return StackPion, nil
	case "lean":
		return StackLean, nil
	}
	return 0, fmt.Errorf("transport: unknown stack %q (want lean or pion)", name)
}
