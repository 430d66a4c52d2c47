package codec

import (
	"fmt"
	"io"
	"testing"
	"text/tabwriter"

	"github.com/tongbu/tongbu/bench/internal/codecbench"
	"github.com/tongbu/tongbu/bench/internal/harness"
)

func init() {
	harness.Register("codec", "seed-000 character update: tongbu codec vs encoding/binary and encoding/json", benchCodec)
}

// seedBits is the size of the seed's G2C_NEW_CHARACTER_INTO_REGION (17
// bytes, seed 000 section 5.3).
const seedBits = 136

type codecRow struct {
	c              codecbench.Case
	encode, decode testing.BenchmarkResult
}

// nsPerOp keeps the fraction that BenchmarkResult.NsPerOp drops.
func nsPerOp(r testing.BenchmarkResult) float64 {
	if r.N == 0 {
		return 0
	}
	return float64(r.T.Nanoseconds()) / float64(r.N)
}

func benchCodec(_ []string, out io.Writer) error {
	fmt.Fprintln(out, "codec: one character update of seed 000 section 5.3")
	fmt.Fprintln(out, "(handle, X, Y, velocity, state, destination, life, mana, rage, magic state)")
	fmt.Fprintln(out)
	var rows []codecRow
	for _, c := range codecbench.Cases() {
		row := codecRow{c: c, encode: testing.Benchmark(c.Encode), decode: testing.Benchmark(c.Decode)}
		if row.encode.N == 0 || row.decode.N == 0 {
			return fmt.Errorf("case %q failed to run", c.Name)
		}
		rows = append(rows, row)
	}
	tongbu, binary := rows[0], rows[3]
	tw := tabwriter.NewWriter(out, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "encoding\tbits\tvs seed\tencode ns\tdecode ns\tallocs/op\tencode vs binary\tdecode vs binary\t")
	for _, r := range rows {
		allocs := r.encode.AllocsPerOp() + r.decode.AllocsPerOp()
		fmt.Fprintf(tw, "%s\t%d\t%.2f\t%.1f\t%.1f\t%d\t%.2fx\t%.2fx\t\n",
			r.c.Name, r.c.Bits, float64(r.c.Bits)/seedBits, nsPerOp(r.encode), nsPerOp(r.decode), allocs,
			nsPerOp(binary.encode)/nsPerOp(r.encode), nsPerOp(binary.decode)/nsPerOp(r.decode))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	fmt.Fprintf(out, "\nseed struct: %d bits; \"vs binary\" is how many times faster than encoding/binary.\n", seedBits)
	fmt.Fprintln(out, "The full record is the forced-sync case (a character standing still); a moving one adds its destination.")
	fmt.Fprintln(out, "The delta is one frame of a moving character against the baseline the receiver acknowledged.")
	fmt.Fprintln(out, harness.Result("codec",
		"record_bits", tongbu.c.Bits,
		"seed_bits", seedBits,
		"delta_bits", rows[2].c.Bits,
		"moving_bits", rows[1].c.Bits,
		"encode_ns", nsPerOp(tongbu.encode),
		"decode_ns", nsPerOp(tongbu.decode),
		"allocs", tongbu.encode.AllocsPerOp()+tongbu.decode.AllocsPerOp(),
		"binary_encode_ns", nsPerOp(binary.encode),
		"binary_decode_ns", nsPerOp(binary.decode),
	))
	return nil
}
