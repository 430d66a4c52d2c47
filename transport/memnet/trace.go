package memnet

import (
	"bufio"
	"fmt"
	"io"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/tongbu/tongbu/internal/errstack"
)

// TraceEvent is the fate of one message on a link.
type TraceEvent struct {
	Delay time.Duration // one-way delay after the link's queue
	Lost  bool
	Dup   bool
}

// Trace is a recorded sequence of message fates. Record one from a link
// (LinkConfig.Record), save it with WriteTo, and replay it later
// (LinkConfig.Replay) to reproduce exactly the delays and losses of a run,
// or of a capture taken from a real network.
type Trace struct {
	mu     sync.Mutex
	events []TraceEvent
	pos    int
}

// NewTrace returns a trace holding events, ready to replay from the first.
func NewTrace(events []TraceEvent) *Trace {
	return &Trace{events: append([]TraceEvent(nil), events...)}
}

// Events returns a copy of the recorded events.
func (t *Trace) Events() []TraceEvent {
	t.mu.Lock()
	defer t.mu.Unlock()
	return append([]TraceEvent(nil), t.events...)
}

// Rewind makes the next replay start from the first event.
func (t *Trace) Rewind() {
	t.mu.Lock()
	t.pos = 0
	t.mu.Unlock()
}

func (t *Trace) add(ev TraceEvent) {
	t.mu.Lock()
	t.events = append(t.events, ev)
	t.mu.Unlock()
}

func (t *Trace) next() (TraceEvent, bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.pos >= len(t.events) {
		return TraceEvent{}, false
	}
	ev := t.events[t.pos]
	t.pos++
	return ev, true
}

// WriteTo writes the trace as text, one event a line:
//
//	<delay in microseconds> [lost] [dup]
func (t *Trace) WriteTo(w io.Writer) (int64, error) {
	bw := bufio.NewWriter(w)
	var n int64
	for _, ev := range t.Events() {
		line := strconv.FormatInt(ev.Delay.Microseconds(), 10)
		if ev.Lost {
			line += " lost"
		}
		if ev.Dup {
			line += " dup"
		}
		k, err := bw.WriteString(line + "\n")
		n += int64(k)
		if err != nil {
			return n, err
		}
	}
	return n, bw.Flush()
}

// maxTraceEvents bounds a trace read from a file.
const maxTraceEvents = 10_000_000

// ReadTrace reads a trace written by WriteTo. Blank lines and lines
// starting with # are skipped.
func ReadTrace(r io.Reader) (*Trace, error) {
	t, err := readTrace(r)
	return t, errstack.With(err)
}

func readTrace(r io.Reader) (*Trace, error) {
	sc := bufio.NewScanner(r)
	t := &Trace{}
	line := 0
	for sc.Scan() {
		line++
		text := strings.TrimSpace(sc.Text())
		if text == "" || strings.HasPrefix(text, "#") {
			continue
		}
		if len(t.events) >= maxTraceEvents {
			return nil, fmt.Errorf("memnet: trace longer than %d events", maxTraceEvents)
		}
		fields := strings.Fields(text)
		us, err := strconv.ParseInt(fields[0], 10, 64)
		if err != nil || us < 0 || us > int64(time.Hour/time.Microsecond) {
			return nil, fmt.Errorf("memnet: trace line %d: bad delay %q", line, fields[0])
		}
		ev := TraceEvent{Delay: time.Duration(us) * time.Microsecond}
		for _, f := range fields[1:] {
			switch f {
			case "lost":
				ev.Lost = true
			case "dup":
				ev.Dup = true
			default:
				return nil, fmt.Errorf("memnet: trace line %d: unknown flag %q", line, f)
			}
		}
		t.events = append(t.events, ev)
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	return t, nil
}
