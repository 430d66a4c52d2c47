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
