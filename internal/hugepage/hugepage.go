package hugepage

import (
	"context"
	"errors"
	"time"
)

// ErrUnsupported is returned by Advise on systems other than Linux.
var ErrUnsupported = errors.New("hugepage: only Linux has transparent huge pages to ask for")

// Report says what a call to Advise did.
type Report struct {
	Mode    string // the system's setting, as /sys/kernel/mm/transparent_hugepage/enabled shows it
	Advised int64  // bytes of heap mappings advised by this call (those not advised before)
	Huge    int64  // bytes of the process's anonymous memory on huge pages after it
}

// Advisor advises the heap's mappings, each once. The zero value is
// ready; it is not safe for concurrent use.
type Advisor struct {
	done map[span]bool
}

type span struct{ start, end uintptr }

// Advise advises the heap's mappings not yet advised and collapses their
// present pages into huge pages (which can take a few hundred
// milliseconds for a large heap).
func (a *Advisor) Advise() (Report, error) { return a.advise() }

// Keep calls Advise now and then every interval until ctx is done,
// passing each result to report (which may be nil).
func Keep(ctx context.Context, interval time.Duration, report func(Report, error)) {
	var a Advisor
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		rep, err := a.Advise()
		if report != nil {
			report(rep, err)
		}
		if errors.Is(err, ErrUnsupported) {
			return
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}
