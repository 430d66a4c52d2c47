package harness

import (
	"io"
	"math"
	"net/http"
	"net/http/httptest"
	"testing"
)

func TestReadMetrics(t *testing.T) {
	page := `# HELP x_seconds a histogram
# TYPE x_seconds histogram
x_seconds_bucket{le="0.001"} 10
x_seconds_bucket{le="0.01"} 90
x_seconds_bucket{le="0.1"} 100
x_seconds_bucket{le="+Inf"} 100
x_seconds_sum 0.5
x_seconds_count 100
tongbu_sent_messages_total 42
tongbu_dropped_total{reason="x"} 7
`
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { io.WriteString(w, page) }))
	defer srv.Close()
	m, err := ReadMetrics(srv.URL, "x_seconds")
	if err != nil {
		t.Fatal(err)
	}
	h := m.Hist["x_seconds"]
	if len(h.Bounds) != 3 || h.Count() != 100 || h.Counts[1] != 80 || h.Sum != 0.5 || m.Samples["tongbu_sent_messages_total"] != 42 {
		t.Fatalf("%+v %+v", h, m.Samples)
	}
	if _, ok := m.Samples[`tongbu_dropped_total{reason="x"}`]; ok {
		t.Error("a labelled sample read as unlabelled")
	}
	// The median lies in the second bucket, 40 of its 80 in: 0.001 + 0.009/2.
	if q, over := h.Quantile(0.5); over || math.Abs(q-0.0055) > 1e-9 {
		t.Errorf("median %v (over %v), want 0.0055", q, over)
	}
	if q, over := h.Quantile(1); over || q != 0.1 {
		t.Errorf("max %v (over %v)", q, over)
	}
	d := h.Since(Histogram{Bounds: h.Bounds, Counts: []uint64{10, 70, 0, 0}, Sum: 0.2})
	if d.Count() != 20 || d.Counts[1] != 10 || d.Counts[2] != 10 || math.Abs(d.Sum-0.3) > 1e-9 {
		t.Errorf("since: %+v", d)
	}
	if _, err := ReadMetrics(srv.URL, "y_seconds"); err == nil {
		t.Error("a missing histogram was not an error")
	}
}
