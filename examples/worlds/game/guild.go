package game

// Guild is a guild as every world process reads it: shared game data that
// the lobby owns and the replica (package replica) carries to the nodes
// over NATS.
//
//go:generate go run github.com/tongbu/tongbu/cmd/codecgen -type Guild,Member
type Guild struct {
	Name    string `codec:"string,max=16"`
	Tag     string `codec:"string,max=4"`
	Members uint16 `codec:"uint,max=4000,delta=4"`
}

// Member says which guild a player belongs to; its record ID is the
// player's (playerID).
type Member struct {
	Guild uint64 `codec:"uvarint"`
}
