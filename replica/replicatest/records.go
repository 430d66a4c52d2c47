// Package replicatest holds sample records for replica: an MMO's guilds
// and teams, declared with codec tags and encoded by code codecgen
// generated. replica's tests, fuzz targets and example replicate them, as
// does tongbu bench replica; a game's own tests of its replication can
// too.
package replicatest

// Guild is a guild as the world server shares it.
//
//go:generate go run github.com/tongbu/tongbu/cmd/codecgen -type Guild,Team
type Guild struct {
	Name    string `codec:"string,max=24"`
	Level   uint8  `codec:"uint,max=100"`
	Members uint16 `codec:"uint,max=500,delta=5"`
	Funds   uint32 `codec:"uvarint"`
	Leader  uint64 `codec:"uvarint"`
	Notice  string `codec:"string,max=64"`
}

// Team is a team as the world server shares it.
type Team struct {
	Leader  uint64 `codec:"uvarint"`
	Size    uint8  `codec:"uint,max=5"`
	Dungeon uint16 `codec:"uint,max=4095,opt"`
}
