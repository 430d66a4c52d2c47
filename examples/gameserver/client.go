//go:build !js

package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"net/http"
	"time"

	"github.com/tongbu/tongbu/engine"
	"github.com/tongbu/tongbu/interest"
	"github.com/tongbu/tongbu/matchmaker"
)

// player is the game's client, in Go: what a game's client does against
// the lobby, then in the match. A bot plays it here; a person's client
// does the same with its input and a screen.
type player struct {
	lobby string // the lobby's API
	node  string // the game server's URL, whose round trip the player measures
	name  string
	token string
	http  *http.Client
}

// profile is /me's answer.
type profile struct {
	Name   string            `json:"name"`
	Rating matchmaker.Rating `json:"rating"`
	Wins   int               `json:"wins"`
	Losses int               `json:"losses"`
}

// call sends a request to the lobby with the player's login and decodes
// a 2xx answer's JSON into out (nil: none expected).
func (p *player) call(ctx context.Context, method, path string, in, out any) error {
	var body io.Reader
	if in != nil {
		b, err := json.Marshal(in)
		if err != nil {
			return err
		}
		body = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, p.lobby+path, body)
	if err != nil {
		return err
	}
	if p.token != "" {
		req.Header.Set("Authorization", "Bearer "+p.token)
	}
	resp, err := p.http.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<16))
	if resp.StatusCode/100 != 2 {
		return &httpError{Status: resp.StatusCode, Text: string(bytes.TrimSpace(b))}
	}
	if out != nil {
		return json.Unmarshal(b, out)
	}
	return nil
}

// httpError is a lobby's refusal.
type httpError struct {
	Status int
	Text   string
}

func (e *httpError) Error() string { return fmt.Sprintf("%d %s", e.Status, e.Text) }

// signIn signs the player up, or logs it in if its account exists.
func (p *player) signIn(ctx context.Context, password string) error {
	c := credentials{Name: p.name, Password: password}
	if err := p.call(ctx, "POST", "/signup", c, nil); err != nil {
		if he, ok := err.(*httpError); !ok || he.Status != http.StatusConflict {
			return err
		}
	}
	var tok struct {
		Token string `json:"token"`
	}
	if err := p.call(ctx, "POST", "/login", c, &tok); err != nil {
		return err
	}
	p.token = tok.Token
	return nil
}

// TUTORIAL:client-queue
// findMatch measures the round trip to the game's regions, on the UDP
// path the match will use, and asks the lobby for a match.
func (p *player) findMatch(ctx context.Context) (assignment, error) {
	pings, err := engine.MeasureRegions(ctx, []engine.RegionNode{{Region: region, URL: p.node}}, nil)
	if err != nil {
		return assignment{}, err
	}
	var a assignment
	err = p.call(ctx, "POST", "/play", map[string]any{"rtt_ms": engine.RegionRTTs(pings)}, &a)
	return a, err
}

// TUTORIAL:end

// fightStats is what a fight saw.
type fightStats struct {
	Casts int
	Life  int // the player's own life at the end
}

// fight plays a match: walk toward the opponent, cast the bolt at it
// when it is in range on the screen, until the world ends the match.
func (p *player) fight(ctx context.Context, a assignment) (fightStats, error) {
	var st fightStats
	c, err := engine.Dial(ctx, a.URL, a.Ticket, nil)
	if err != nil {
		return st, err
	}
	defer c.Close()
	ic := c.Interest()
	me := c.Entity()
	middle := c.InterestConfig().Bounds()
	middle.X, middle.Y = middle.X/2, middle.Y/2
	drawn := make([]interest.Drawn, 0, 8)
	var nextCast, nextMove time.Time
	tk := time.NewTicker(time.Second / 60) // a screen's frames
	defer tk.Stop()
	for {
		select {
		case <-ctx.Done():
			return st, ctx.Err()
		case <-c.Done(): // the world closed: the match is over
			return st, nil
		case now := <-tk.C:
			if err := c.Update(now); err != nil {
				return st, nil // the connection ended with the match
			}
			ic.Advance(now)
			if lg, ok := ic.Self(); ok {
				st.Life = int(lg.Life)
			}
			drawn = ic.Render(now, drawn[:0])
			var self, foe *interest.Drawn
			for i := range drawn {
				switch d := &drawn[i]; {
				case d.ID == me:
					self = d
				case d.Kind == interest.Player:
					foe = d
				}
			}
			if self == nil {
				continue
			}
			if foe == nil { // out of sight: to the middle of the arena
				if now.After(nextMove) {
					ic.Move(middle, 32)
					nextMove = now.Add(time.Second)
				}
				continue
			}
			// TUTORIAL:client-cast
			dist := math.Hypot(foe.X-self.X, foe.Y-self.Y)
			switch {
			case dist <= boltRange*0.9 && now.After(nextCast):
				ic.Skill(boltSkill, foe.ID) // judged where the foe is drawn now
				nextCast = now.Add(boltCooldown + 50*time.Millisecond)
				st.Casts++
			case dist > boltRange*0.8 && now.After(nextMove): // walk to half the range
				k := (dist - boltRange/2) / dist
				to := interest.Vec{X: int32(self.X + k*(foe.X-self.X)), Y: int32(self.Y + k*(foe.Y-self.Y))}
				ic.Move(to, 32) // 8 m/s
				nextMove = now.Add(250 * time.Millisecond)
			}
			// TUTORIAL:end
		}
	}
}

// me returns the player's profile.
func (p *player) me(ctx context.Context) (profile, error) {
	var pr profile
	err := p.call(ctx, "GET", "/me", nil, &pr)
	return pr, err
}
