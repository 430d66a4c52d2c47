package interest

import (
	"fmt"
	"time"

	"github.com/tongbu/tongbu/codec"
)

// maxConfigUvint bounds each number of a client configuration on the
// wire.
const maxConfigUvint = 1 << 30

// WriteClientConfig writes the part of a world's configuration that its
// clients need: the map's size and the entity IDs' range (which size the
// wire's fields), the frame rate, the movement history a command's stamp
// may reach back into, and the bounds of speeds, moves, magic state and
// custom payloads. What only the server uses (forced sync and its lead,
// tolerance, how far ahead a command may be, the tick's budget, the
// discovery rate, leave messages, the sync policy) stays on the server.
// The engine's welcome carries it (SPEC.md, "Engine messages").
func WriteClientConfig(w *codec.Writer, c Config) {
	for _, v := range []int{c.RegionSize, c.Width, c.Height, c.Hz, c.MaxEntities,
		int(c.History / time.Millisecond), c.MaxSpeed, c.MaxMove, c.MagicBits, c.MaxCustom} {
		w.WriteUvarint(uint64(v))
	}
}

// ReadClientConfig reads what WriteClientConfig wrote into a Config
// whose server-only fields take their defaults, and checks it as
// Validate does: a config that decodes is one a Client accepts.
func ReadClientConfig(r *codec.Reader) (Config, error) {
	var c Config
	num := func() int {
		v := r.ReadUvarint()
		if v > maxConfigUvint {
			r.Fail(fmt.Errorf("%w: field of %d", ErrMalformed, v))
		}
		return int(v)
	}
	c.RegionSize, c.Width, c.Height, c.Hz, c.MaxEntities = num(), num(), num(), num(), num()
	c.History = time.Duration(num()) * time.Millisecond
	c.MaxSpeed, c.MaxMove, c.MagicBits, c.MaxCustom = num(), num(), num(), num()
	if err := r.Err(); err != nil {
		return c, fmt.Errorf("%w: client configuration: %w", ErrConfig, err)
	}
	if c.RegionSize == 0 || c.Width == 0 || c.Height == 0 || c.Hz == 0 || c.MaxEntities == 0 || c.History == 0 || c.MaxSpeed == 0 || c.MaxMove == 0 {
		return c, fmt.Errorf("%w: client configuration with a zero size", ErrConfig)
	}
	c = c.WithDefaults() // the server-only fields, which the client does not use
	return c, c.Validate()
}

// WriteClientGroups writes the world's field groups (Config.Groups), as
// its clients need them to read the group records: after the client
// configuration, for clients of wire versions that read them (SPEC.md
// §9.2). What a group and each field are called goes too, for the game.
func WriteClientGroups(w *codec.Writer, groups []Group) {
	w.WriteUint(uint64(len(groups)), MaxGroups)
	for _, g := range groups {
		w.WriteString(g.Name, 32)
		w.WriteBool(g.Request)
		w.WriteUvarint(uint64(g.Every / time.Millisecond))
		w.WriteUint(uint64(len(g.Fields)-1), MaxGroupFields-1)
		for _, f := range g.Fields {
			w.WriteString(f.Name, 32)
			w.WriteUint(uint64(f.Bits-1), 63)
			w.WriteBool(f.Signed)
		}
	}
}

// ReadClientGroups reads what WriteClientGroups wrote into c.Groups and
// checks c again as Validate does.
func ReadClientGroups(r *codec.Reader, c Config) (Config, error) {
	n := int(r.ReadUint(MaxGroups))
	var groups []Group
	for i := 0; i < n && r.Err() == nil; i++ {
		g := Group{Name: r.ReadString(32), Request: r.ReadBool()}
		every := r.ReadUvarint()
		if every > uint64(time.Hour/time.Millisecond) {
			r.Fail(fmt.Errorf("%w: group every %d ms", ErrMalformed, every))
		}
		g.Every = time.Duration(every) * time.Millisecond
		nf := int(r.ReadUint(MaxGroupFields-1)) + 1
		for j := 0; j < nf && r.Err() == nil; j++ {
			g.Fields = append(g.Fields, Field{Name: r.ReadString(32), Bits: int(r.ReadUint(63)) + 1, Signed: r.ReadBool()})
		}
		groups = append(groups, g)
	}
	if err := r.Err(); err != nil {
		return c, fmt.Errorf("%w: field groups: %w", ErrConfig, err)
	}
	c.Groups = groups
	return c, c.Validate()
}
