package main

// replicaGuild is the guild record of the replica scenario (seed 004's
// 帮会), as a world server would declare it.
//
//go:generate go run github.com/tongbu/tongbu/cmd/codecgen -type replicaGuild
type replicaGuild struct {
	Name    string `codec:"string,max=24"`
	Level   uint8  `codec:"uint,max=100"`
	Members uint16 `codec:"uint,max=500,delta=5"`
	Funds   uint32 `codec:"uvarint"`
	Leader  uint64 `codec:"uvarint"`
	Notice  string `codec:"string,max=64"`
}
