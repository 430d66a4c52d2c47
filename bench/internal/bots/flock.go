//go:build !js

package bots

import (
	"sync"
	"time"
)

// player is one bot a flock plays: its tick, and its end.
type player interface {
	play(i int, now time.Time) // i: the bot's index in joining order
	close()
}

// flock holds the bots that have joined and plays every one of them from
// the moment it joins, on a few loops: a bot that waited for the others
// would fall behind its room or world.
type flock[B player] struct {
	mu   sync.Mutex
	bots []B
	stop chan struct{}
	wg   sync.WaitGroup
}

// start runs loops goroutines that, hz times a second, play every
// loops-th bot that has joined.
func (f *flock[B]) start(loops, hz int) {
	f.stop = make(chan struct{})
	for g := range loops {
		f.wg.Add(1)
		go func() {
			defer f.wg.Done()
			tk := time.NewTicker(time.Second / time.Duration(hz))
			defer tk.Stop()
			for {
				select {
				case <-f.stop:
					return
				case <-tk.C:
				}
				all := f.all()
				for i := g; i < len(all); i += loops {
					all[i].play(i, time.Now())
				}
			}
		}()
	}
}

// add takes a bot that has joined (from any goroutine).
func (f *flock[B]) add(b B) {
	f.mu.Lock()
	f.bots = append(f.bots, b)
	f.mu.Unlock()
}

// all returns the bots that have joined so far.
func (f *flock[B]) all() []B {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.bots
}

// end stops the loops and closes every bot.
func (f *flock[B]) end() {
	close(f.stop)
	f.wg.Wait()
	for _, b := range f.all() {
		b.close()
	}
}
