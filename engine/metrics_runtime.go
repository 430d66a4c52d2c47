//go:build !js

package engine

import (
	"fmt"
	"os"
	"runtime"
	"runtime/debug"
	"strconv"
	"strings"
	"time"

	"github.com/tongbu/tongbu/transport"
)

// processStart is when the process started, as near as the library can
// tell (its first use).
var processStart = time.Now()

// writeRuntimeMetrics writes the Go runtime's and the process's figures
// under the names the Prometheus Go and process collectors use
// (go_goroutines, go_memstats_*, go_gc_duration_seconds, process_*), so
// that the dashboards made for them work as they are. Written by hand, as
// the rest: the client library would be the module's largest dependency
// for a few dozen lines.
func writeRuntimeMetrics(b *strings.Builder) {
	metric := func(name, typ, help string) {
		fmt.Fprintf(b, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, typ)
	}
	value := func(name, typ, help string, v float64) {
		metric(name, typ, help)
		fmt.Fprintf(b, "%s %s\n", name, strconv.FormatFloat(v, 'g', -1, 64))
	}
	value("go_goroutines", "gauge", "Number of goroutines that currently exist.", float64(runtime.NumGoroutine()))
	threads, _ := runtime.ThreadCreateProfile(nil)
	value("go_threads", "gauge", "Number of OS threads created.", float64(threads))
	metric("go_info", "gauge", "Information about the Go environment.")
	fmt.Fprintf(b, "go_info{version=%s} 1\n", label(runtime.Version()))

	var gc debug.GCStats
	gc.PauseQuantiles = make([]time.Duration, 5)
	debug.ReadGCStats(&gc)
	metric("go_gc_duration_seconds", "summary", "A summary of the wall-time pause (stop-the-world) duration in garbage collection cycles.")
	for i, q := range []string{"0", "0.25", "0.5", "0.75", "1"} {
		fmt.Fprintf(b, "go_gc_duration_seconds{quantile=\"%s\"} %g\n", q, gc.PauseQuantiles[i].Seconds())
	}
	fmt.Fprintf(b, "go_gc_duration_seconds_sum %g\ngo_gc_duration_seconds_count %d\n", gc.PauseTotal.Seconds(), gc.NumGC)

	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	for _, m := range []struct {
		name, typ, help string
		v               uint64
	}{
		{"alloc_bytes", "gauge", "Number of bytes allocated in heap and currently in use.", ms.Alloc},
		{"alloc_bytes_total", "counter", "Total number of bytes allocated in heap until now, even if released already.", ms.TotalAlloc},
		{"sys_bytes", "gauge", "Number of bytes obtained from system.", ms.Sys},
		{"mallocs_total", "counter", "Total number of heap objects allocated.", ms.Mallocs},
		{"frees_total", "counter", "Total number of heap objects frees.", ms.Frees},
		{"heap_alloc_bytes", "gauge", "Number of heap bytes allocated and currently in use.", ms.HeapAlloc},
		{"heap_sys_bytes", "gauge", "Number of heap bytes obtained from system.", ms.HeapSys},
		{"heap_idle_bytes", "gauge", "Number of heap bytes waiting to be used.", ms.HeapIdle},
		{"heap_inuse_bytes", "gauge", "Number of heap bytes that are in use.", ms.HeapInuse},
		{"heap_released_bytes", "gauge", "Number of heap bytes released to OS.", ms.HeapReleased},
		{"heap_objects", "gauge", "Number of currently allocated objects.", ms.HeapObjects},
		{"stack_inuse_bytes", "gauge", "Number of bytes obtained from system for stack allocator in non-CGO environments.", ms.StackInuse},
		{"stack_sys_bytes", "gauge", "Number of bytes obtained from system for stack allocator.", ms.StackSys},
		{"mspan_inuse_bytes", "gauge", "Number of bytes in use by mspan structures.", ms.MSpanInuse},
		{"mspan_sys_bytes", "gauge", "Number of bytes used for mspan structures obtained from system.", ms.MSpanSys},
		{"mcache_inuse_bytes", "gauge", "Number of bytes in use by mcache structures.", ms.MCacheInuse},
		{"mcache_sys_bytes", "gauge", "Number of bytes used for mcache structures obtained from system.", ms.MCacheSys},
		{"buck_hash_sys_bytes", "gauge", "Number of bytes used by the profiling bucket hash table.", ms.BuckHashSys},
		{"gc_sys_bytes", "gauge", "Number of bytes used for garbage collection system metadata.", ms.GCSys},
		{"other_sys_bytes", "gauge", "Number of bytes used for other system allocations.", ms.OtherSys},
		{"next_gc_bytes", "gauge", "Number of heap bytes when next garbage collection will take place.", ms.NextGC},
	} {
		value("go_memstats_"+m.name, m.typ, m.help, float64(m.v))
	}
	value("go_memstats_last_gc_time_seconds", "gauge", "Number of seconds since 1970 of last garbage collection.", float64(ms.LastGC)/1e9)

	if cpu, ok := processCPU(); ok {
		value("process_cpu_seconds_total", "counter", "Total user and system CPU time spent in seconds.", cpu.Seconds())
	}
	if rss, vsz, ok := procMemory(); ok {
		value("process_resident_memory_bytes", "gauge", "Resident memory size in bytes.", float64(rss))
		value("process_virtual_memory_bytes", "gauge", "Virtual memory size in bytes.", float64(vsz))
	}
	if fds, err := os.ReadDir("/proc/self/fd"); err == nil {
		value("process_open_fds", "gauge", "Number of open file descriptors.", float64(len(fds)))
	}
	if n, ok := maxFDs(); ok {
		value("process_max_fds", "gauge", "Maximum number of open file descriptors.", float64(n))
	}
	value("process_start_time_seconds", "gauge", "Start time of the process since unix epoch in seconds.", float64(processStart.UnixNano())/1e9)
}

// procMemory reads the process's resident and virtual sizes from
// /proc/self/statm (Linux); ok is false elsewhere.
func procMemory() (rss, vsz uint64, ok bool) {
	b, err := os.ReadFile("/proc/self/statm")
	if err != nil {
		return 0, 0, false
	}
	f := strings.Fields(string(b))
	if len(f) < 2 {
		return 0, 0, false
	}
	pages, err1 := strconv.ParseUint(f[0], 10, 64)
	res, err2 := strconv.ParseUint(f[1], 10, 64)
	if err1 != nil || err2 != nil {
		return 0, 0, false
	}
	page := uint64(os.Getpagesize())
	return res * page, pages * page, true
}

// writeDataPathMetrics writes the WebRTC data path's figures: the time
// the reader took a datagram, what the hostile-peer bounds held and
// refused.
func writeDataPathMetrics(b *strings.Builder, st transport.DataPathStats) {
	metric := func(name, typ, help string) {
		fmt.Fprintf(b, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, typ)
	}
	metric("tongbu_transport_datagram_seconds", "histogram", "How long the data path's reader took for one datagram: every protocol of its peer and the room or world it went to.")
	var cum uint64
	for i, le := range transport.DatagramBounds {
		cum += st.DatagramBuckets[i]
		fmt.Fprintf(b, "tongbu_transport_datagram_seconds_bucket{le=\"%g\"} %d\n", le.Seconds(), cum)
	}
	cum += st.DatagramBuckets[len(transport.DatagramBounds)]
	fmt.Fprintf(b, "tongbu_transport_datagram_seconds_bucket{le=\"+Inf\"} %d\n", cum)
	fmt.Fprintf(b, "tongbu_transport_datagram_seconds_sum %g\ntongbu_transport_datagram_seconds_count %d\n", st.DatagramTime.Seconds(), cum)
	metric("tongbu_transport_datagram_max_seconds", "gauge", "The longest the data path's reader took for one datagram since the server started.")
	fmt.Fprintf(b, "tongbu_transport_datagram_max_seconds %g\n", st.MaxDatagram.Seconds())
	metric("tongbu_transport_held_chunks_max", "gauge", "The most SCTP chunks one connection held for reassembly or order at once since the server started (bounded).")
	fmt.Fprintf(b, "tongbu_transport_held_chunks_max %d\n", st.HeldChunksMax)
	metric("tongbu_transport_moves_total", "counter", "Connections that moved to a new address they proved theirs, and moves refused (too many a minute, or the address taken).")
	fmt.Fprintf(b, "tongbu_transport_moves_total{result=\"made\"} %d\ntongbu_transport_moves_total{result=\"refused\"} %d\n", st.Moves, st.MovesRefused)
	metric("tongbu_transport_checks_refused_total", "counter", "Authenticated ICE checks refused for coming from an address another connection holds (forged to take it).")
	fmt.Fprintf(b, "tongbu_transport_checks_refused_total %d\n", st.ChecksRefused)
	metric("tongbu_transport_flushes_deferred_total", "counter", "Times the data path's sender found a connection busy and queued it again rather than wait.")
	fmt.Fprintf(b, "tongbu_transport_flushes_deferred_total %d\n", st.FlushesDeferred)
}
