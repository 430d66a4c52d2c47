// Package recordtest holds records that exercise every field kind and
// option of cmd/codecgen, for the codec's property and fuzz tests.
package recordtest

// Mode is a named integer type, as games declare their enums.
type Mode uint8

// Sample has one field of every kind and option.
//
//go:generate go run github.com/tongbu/tongbu/cmd/codecgen -type Sample,Wide
type Sample struct {
	Alive   bool
	Mode    Mode    `codec:"uint,max=5"`
	Level   uint8   `codec:"uint,max=99,opt"`
	X       uint16  `codec:"uint,max=40000,delta=6"`
	Y       int32   `codec:"int,min=-70000,max=70000,delta=9"`
	TargetX uint16  `codec:"int,rel=X,min=-300,max=300,opt"`
	Heading float32 `codec:"quant,min=0,max=360,step=0.5"`
	Score   int64   `codec:"varint"`
	Gold    uint32  `codec:"uvarint"`
	Name    string  `codec:"string,max=24"`
	Blob    []byte  `codec:"bytes,max=40,opt"`
	Tiny    int8
	Secret  string `codec:"-"`
}

// Wide has fields too wide to pack, which take the unpacked path.
type Wide struct {
	Big   uint64 `codec:"uint,delta=12"`
	Small int64  `codec:"int,min=-9223372036854775808,max=9223372036854775807"`
	Flag  bool
}
