package hugepage

import (
	"context"
	"errors"
	"sync"
	"time"
)

// Report says what a call to Advise did.
type Report struct {
	Mode    string // the system's setting, as /sys/kernel/mm/transparent_hugepage/enabled shows it
	Advised int64  // bytes of the heap advised by this call (address space not advised before)
	Huge    int64  // bytes of the process's anonymous memory on huge pages after it; -1 if nothing was advised by this call or the kernel does not say
}

// Advisor advises the heap's address space, each part once. The zero
// value is ready; it is not safe for concurrent use.
type Advisor struct {
	done []span // address ranges advised, sorted, not touching
}

type span struct{ start, end uintptr }

// Advise advises the parts of the heap's mappings not yet advised and
// collapses their present pages into huge pages (which can take a few
// hundred milliseconds for a large heap).
func (a *Advisor) Advise() (Report, error) { return a.advise() }

// shared is the Advisor of every Keep: the heap is the process's, so
// one Advisor covers it, behind a lock.
var shared struct {
	sync.Mutex
	a Advisor
}

// Keep calls Advise now and then every interval until ctx is done,
// passing each result to report (which may be nil). It returns early when
// Advise returns ErrUnsupported.
//
// Every Keep in the process advises through one shared Advisor, since
// the heap is the whole process's: two at once (two servers in one
// process) do not advise the same part of the heap twice, and a Keep
// started after another may find nothing left to advise (Report.Advised
// 0). An Advisor of one's own is not shared.
func Keep(ctx context.Context, interval time.Duration, report func(Report, error)) {
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		shared.Lock()
		rep, err := shared.a.Advise()
		shared.Unlock()
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
