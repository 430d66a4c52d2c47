package hugepage_test

import (
	"context"
	"log"
	"time"

	"github.com/tongbu/tongbu/internal/hugepage"
)

// A server asks for huge pages at start and for what the heap adds every
// minute until it stops, logging what it got. (Not run: what it prints
// depends on the system.)
func ExampleKeep() {
	ctx, stop := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		hugepage.Keep(ctx, time.Minute, func(r hugepage.Report, err error) {
			if err != nil {
				log.Print(err) // hugepage.ErrUnsupported: Keep returns
				return
			}
			log.Printf("heap: %d bytes advised, %d on huge pages", r.Advised, r.Huge)
		})
	}()
	stop()
	<-done
}
