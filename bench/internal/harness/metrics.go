package harness

import (
	"bufio"
	"errors"
	"fmt"
	"math"
	"net/http"
	"strconv"
	"strings"
)

// Histogram is one Prometheus histogram as a scenario reads it from a
// server's /metrics: the buckets' upper bounds and their counts (per
// bucket, not cumulative; the last is +Inf), and the sum.
type Histogram struct {
	Bounds []float64
	Counts []uint64
	Sum    float64
}

// Since returns what h counted after old, an earlier reading of it.
func (h Histogram) Since(old Histogram) Histogram {
	d := Histogram{Bounds: h.Bounds, Counts: make([]uint64, len(h.Counts)), Sum: h.Sum - old.Sum}
	for i := range h.Counts {
		d.Counts[i] = h.Counts[i]
		if i < len(old.Counts) {
			d.Counts[i] -= old.Counts[i]
		}
	}
	return d
}

// Count returns the observations.
func (h Histogram) Count() uint64 {
	var n uint64
	for _, c := range h.Counts {
		n += c
	}
	return n
}

// Quantile returns the q-quantile in the histogram's unit, interpolated in
// its bucket as Prometheus's histogram_quantile does; over is set when it
// lies past the last finite bound (the value is then that bound).
func (h Histogram) Quantile(q float64) (v float64, over bool) {
	n := h.Count()
	if n == 0 || len(h.Bounds) == 0 {
		return 0, false
	}
	rank := q * float64(n)
	var cum uint64
	for i, c := range h.Counts {
		if float64(cum+c) >= rank && c > 0 {
			if i >= len(h.Bounds) { // the +Inf bucket (or a hand-made histogram's extra counts)
				return h.Bounds[len(h.Bounds)-1], true
			}
			lo := 0.0
			if i > 0 {
				lo = h.Bounds[i-1]
			}
			return lo + (h.Bounds[i]-lo)*(rank-float64(cum))/float64(c), false
		}
		cum += c
	}
	return h.Bounds[len(h.Bounds)-1], true
}

// Metrics is what ReadMetrics found: the histograms named, and every
// sample without labels.
type Metrics struct {
	Hist    map[string]Histogram
	Samples map[string]float64
}

// Messages returns the messages an engine server received and sent
// (tongbu_received_messages_total and tongbu_sent_messages_total).
func (m Metrics) Messages() float64 {
	return m.Samples["tongbu_received_messages_total"] + m.Samples["tongbu_sent_messages_total"]
}

// ReadMetrics reads the server's metrics at url and returns the named
// histograms (each must be there) and the unlabelled samples.
func ReadMetrics(url string, histograms ...string) (Metrics, error) {
	m := Metrics{Hist: map[string]Histogram{}, Samples: map[string]float64{}}
	resp, err := http.Get(url)
	if err != nil {
		return m, err
	}
	defer resp.Body.Close()
	prev := map[string]uint64{}
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		line := sc.Text()
		if strings.HasPrefix(line, "#") || line == "" {
			continue
		}
		name, val, ok := strings.Cut(line, " ")
		if !ok {
			return m, fmt.Errorf("metrics line %q", line)
		}
		if !strings.Contains(name, "{") {
			v, err := strconv.ParseFloat(val, 64)
			if err != nil {
				return m, fmt.Errorf("metrics line %q: %w", line, err)
			}
			m.Samples[name] = v
		}
		for _, h := range histograms {
			rest, ok := strings.CutPrefix(line, h+`_bucket{le="`)
			if !ok {
				continue
			}
			le, val, ok := strings.Cut(rest, `"} `)
			if !ok {
				return m, fmt.Errorf("metrics line %q", line)
			}
			cum, err := strconv.ParseUint(val, 10, 64)
			if err != nil {
				return m, fmt.Errorf("metrics line %q: %w", line, err)
			}
			hist := m.Hist[h]
			if le != "+Inf" {
				b, err := strconv.ParseFloat(le, 64)
				if err != nil {
					return m, fmt.Errorf("metrics line %q: %w", line, err)
				}
				hist.Bounds = append(hist.Bounds, b)
			}
			hist.Counts = append(hist.Counts, cum-prev[h])
			prev[h] = cum
			m.Hist[h] = hist
		}
	}
	if err := sc.Err(); err != nil {
		return m, err
	}
	for _, h := range histograms {
		hist := m.Hist[h]
		if len(hist.Bounds) == 0 || len(hist.Counts) != len(hist.Bounds)+1 || math.IsInf(hist.Bounds[len(hist.Bounds)-1], 0) {
			return m, errors.New("metrics: no " + h + " histogram")
		}
		hist.Sum = m.Samples[h+"_sum"]
		m.Hist[h] = hist
	}
	return m, nil
}
