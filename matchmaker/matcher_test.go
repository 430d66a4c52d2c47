package matchmaker

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"
	"time"
)

var t0 = time.Date(2026, 11, 27, 12, 0, 0, 0, time.UTC)

func solo(id string, mu float64, mode, build string, rtt map[string]int) Ticket {
	return Ticket{ID: id, Players: []Player{{ID: id, Rating: Rating{Mu: mu, Sigma: 2}}}, Mode: mode, Build: build, RTT: rtt}
}

func party(id string, mode string, mus ...float64) Ticket {
	t := Ticket{ID: id, Mode: mode}
	for i, mu := range mus {
		t.Players = append(t.Players, Player{ID: fmt.Sprint(id, ".", i), Rating: Rating{Mu: mu, Sigma: 2}})
	}
	return t
}

var testModes = []Mode{
	{Name: "duel", Teams: 2, TeamSize: 1},
	{Name: "5v5", Teams: 2, TeamSize: 5},
	{Name: "ffa4", Teams: 4, TeamSize: 1},
	{Name: "3x3", Teams: 3, TeamSize: 3},
}

func newTestMatcher(t *testing.T, cfg Config) *Matcher {
	t.Helper()
	if cfg.Modes == nil {
		cfg.Modes = testModes
	}
	m, err := NewMatcher(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func add(t *testing.T, m *Matcher, now time.Time, ts ...Ticket) {
	t.Helper()
	for _, tk := range ts {
		if err := m.Add(tk, now); err != nil {
			t.Fatalf("add %s: %v", tk.ID, err)
		}
	}
}

func ids(mt Match) []string {
	var out []string
	for _, t := range mt.Tickets {
		out = append(out, t.ID)
	}
	slices.Sort(out)
	return out
}

func TestDuelSkillWidens(t *testing.T) {
	m := newTestMatcher(t, Config{})
	add(t, m, t0, solo("a", 20, "duel", "", nil), solo("b", 32, "duel", "", nil), solo("c", 21, "duel", "", nil))
	got, _ := m.Match(t0, nil)
	if len(got) != 1 || !slices.Equal(ids(got[0]), []string{"a", "c"}) {
		t.Fatalf("first pass: %+v, want a with c", got)
	}
	add(t, m, t0, solo("d", 40, "duel", "", nil))
	// b (32) and d (40) are 8 apart: beyond Beta, within it after
	// (8 - Beta) / (Beta/4) seconds of waiting.
	if got, _ := m.Match(t0.Add(time.Second), nil); len(got) != 0 {
		t.Fatalf("b and d matched after 1 s: %+v", got)
	}
	got, _ = m.Match(t0.Add(5*time.Second), nil)
	if len(got) != 1 || !slices.Equal(ids(got[0]), []string{"b", "d"}) {
		t.Fatalf("after 5 s: %+v, want b with d", got)
	}
	if m.Len() != 0 {
		t.Errorf("%d tickets left", m.Len())
	}
}

func TestPartiesStayWholeAndTeamsEven(t *testing.T) {
	m := newTestMatcher(t, Config{})
	add(t, m, t0,
		party("p3", "5v5", 30, 30, 30),
		party("p2", "5v5", 20, 20),
		party("q2", "5v5", 29, 31),
		party("s1", "5v5", 21),
		party("s2", "5v5", 24),
		party("t1", "5v5", 26),
	)
	got, _ := m.Match(t0.Add(20*time.Second), nil)
	if len(got) != 1 {
		t.Fatalf("%d matches, want 1", len(got))
	}
	mt := got[0]
	for _, team := range mt.Teams {
		if len(team) != 5 {
			t.Fatalf("teams %v", mt.Teams)
		}
	}
	teamOf := map[string]int{}
	var sums [2]float64
	for i, team := range mt.Teams {
		for _, p := range team {
			teamOf[p.ID] = i
			sums[i] += p.Rating.Mu
		}
	}
	for _, tk := range mt.Tickets {
		for _, p := range tk.Players {
			if teamOf[p.ID] != teamOf[tk.Players[0].ID] {
				t.Errorf("party %s split: %v", tk.ID, mt.Teams)
			}
		}
	}
	// The parties' sums are 90, 40, 60, 21, 24 and 26: the best split
	// (p3 with p2; q2 with the three alone) is 130 against 131.
	if d := math.Abs(sums[0] - sums[1]); d != 1 {
		t.Errorf("team sums %v differ by %.1f, want 1", sums, d)
	}
}

func TestBuildsMeetOnlyThroughASwitch(t *testing.T) {
	m := newTestMatcher(t, Config{})
	add(t, m, t0, solo("live", 25, "duel", "1.4", nil), solo("preview", 25, "duel", "1.5", nil))
	if got, _ := m.Match(t0.Add(time.Minute), nil); len(got) != 0 {
		t.Fatalf("builds 1.4 and 1.5 met with the switch closed: %+v", got)
	}
	m.OpenBuilds("1.5", "1.4")
	if sw := m.Switches(); !slices.Equal(sw, [][2]string{{"1.4", "1.5"}}) {
		t.Errorf("switches %v", sw)
	}
	if g := m.GroupOf("1.4"); g != "1.4,1.5" {
		t.Errorf("group of 1.4: %q", g)
	}
	got, _ := m.Match(t0.Add(time.Minute), nil)
	if len(got) != 1 || !slices.Equal(got[0].Builds, []string{"1.4", "1.5"}) {
		t.Fatalf("with the switch open: %+v", got)
	}
	m.CloseBuilds("1.4", "1.5")
	add(t, m, t0, solo("live2", 25, "duel", "1.4", nil), solo("preview2", 25, "duel", "1.5", nil))
	if got, _ := m.Match(t0.Add(time.Minute), nil); len(got) != 0 {
		t.Fatalf("met after the switch closed: %+v", got)
	}
}

func TestRegionsMinimiseTheWorstRoundTrip(t *testing.T) {
	sites := func() []Site {
		return []Site{
			{Node: "eu-1", Region: "eu", Free: 1},
			{Node: "eu-2", Region: "eu", Free: 3},
			{Node: "us-1", Region: "us", Free: 5},
			{Node: "as-1", Region: "as", Free: 5, Builds: []string{"1.4"}},
		}
	}
	m := newTestMatcher(t, Config{})
	// Two players near Europe; the worst is 60 ms there, 90 in the US.
	add(t, m, t0,
		solo("a", 25, "duel", "", map[string]int{"eu": 20, "us": 90, "as": 200}),
		solo("b", 25, "duel", "", map[string]int{"eu": 60, "us": 70, "as": 250}))
	s := sites()
	got, _ := m.Match(t0, s)
	if len(got) != 1 || got[0].Region != "eu" || got[0].WorstRTT != 60 || got[0].Node != "eu-2" {
		t.Fatalf("%+v, want a match in eu on eu-2 (the most room) with worst RTT 60", got)
	}
	if s[1].Free != 2 {
		t.Errorf("eu-2 free %d after the match, want 2", s[1].Free)
	}
	// Players out of each other's reach (over 80 ms at first) meet once
	// their limit has grown.
	add(t, m, t0,
		solo("c", 25, "duel", "", map[string]int{"eu": 20, "us": 130}),
		solo("d", 25, "duel", "", map[string]int{"eu": 140, "us": 30}))
	if got, _ := m.Match(t0.Add(time.Second), sites()); len(got) != 0 {
		t.Fatalf("matched across 130 ms at once: %+v", got)
	}
	got, _ = m.Match(t0.Add(4*time.Second), sites())
	if len(got) != 1 || got[0].Region != "us" || got[0].WorstRTT != 130 {
		t.Fatalf("after 4 s: %+v, want us at 130 ms", got)
	}
	// No site with room, or none that serves the build: no match.
	add(t, m, t0, solo("e", 25, "duel", "1.5", map[string]int{"as": 10}), solo("f", 25, "duel", "1.5", map[string]int{"as": 10}))
	if got, _ := m.Match(t0, sites()); len(got) != 0 {
		t.Fatalf("placed build 1.5 on a site of 1.4: %+v", got)
	}
	full := sites()
	for i := range full {
		full[i].Free = 0
	}
	add(t, m, t0, solo("g", 25, "duel", "", nil), solo("h", 25, "duel", "", nil))
	if got, _ := m.Match(t0, full); len(got) != 0 {
		t.Fatalf("placed with no room anywhere: %+v", got)
	}
}

func TestFreeForAllAndThreeTeams(t *testing.T) {
	m := newTestMatcher(t, Config{})
	for i := range 4 {
		add(t, m, t0, solo(fmt.Sprint("f", i), 25+float64(i), "ffa4", "", nil))
	}
	add(t, m, t0, party("a", "3x3", 25, 25, 25), party("b", "3x3", 26, 24), party("c", "3x3", 25), party("d", "3x3", 25, 25), party("e", "3x3", 25))
	got, _ := m.Match(t0, nil)
	if len(got) != 2 {
		t.Fatalf("%d matches, want 2", len(got))
	}
	for _, mt := range got {
		want := map[string]int{"ffa4": 1, "3x3": 3}[mt.Mode]
		if len(mt.Teams) != map[string]int{"ffa4": 4, "3x3": 3}[mt.Mode] {
			t.Errorf("%s: %d teams", mt.Mode, len(mt.Teams))
		}
		for _, team := range mt.Teams {
			if len(team) != want {
				t.Errorf("%s: teams %v", mt.Mode, mt.Teams)
			}
		}
	}
}

func TestBackfill(t *testing.T) {
	m := newTestMatcher(t, Config{})
	room := Ticket{ID: "room-7", Mode: "5v5", Backfill: &Backfill{Room: "room-7", Node: "eu-1", Region: "eu",
		Teams: [][]Rating{{{Mu: 25, Sigma: 2}, {Mu: 25, Sigma: 2}, {Mu: 25, Sigma: 2}, {Mu: 25, Sigma: 2}}, {{Mu: 25, Sigma: 2}, {Mu: 25, Sigma: 2}, {Mu: 25, Sigma: 2}}},
		Open:  []int{1, 2}}}
	add(t, m, t0, room, party("duo", "5v5", 24, 26), solo("one", 25, "5v5", "", map[string]int{"eu": 30}), solo("far", 25, "5v5", "", map[string]int{"us": 30}))
	got, _ := m.Match(t0, []Site{{Node: "eu-1", Region: "eu"}, {Node: "us-1", Region: "us", Free: 1}})
	if len(got) != 1 || got[0].Backfill == nil || got[0].Node != "eu-1" {
		t.Fatalf("%+v, want the backfill of room-7", got)
	}
	mt := got[0]
	if len(mt.Teams[0]) != 1 || len(mt.Teams[1]) != 2 || !slices.Equal(ids(mt), []string{"duo", "one", "room-7"}) {
		t.Errorf("backfill teams %v tickets %v", mt.Teams, ids(mt))
	}
}

func TestTimeoutRemoveAndBadTickets(t *testing.T) {
	m := newTestMatcher(t, Config{Timeout: time.Minute})
	add(t, m, t0, solo("old", 10, "duel", "", nil), solo("gone", 40, "duel", "", nil))
	if !m.Remove("gone") || m.Remove("gone") {
		t.Error("Remove")
	}
	if _, exp := m.Match(t0.Add(2*time.Minute), nil); len(exp) != 1 || exp[0].ID != "old" {
		t.Errorf("expired %+v", exp)
	}
	bad := []struct {
		name string
		t    Ticket
		err  error
	}{
		{"no id", solo("", 25, "duel", "", nil), ErrTicket},
		{"no mode", solo("x", 25, "tennis", "", nil), ErrTicket},
		{"party too big", party("x", "duel", 25, 25), ErrTicket},
		{"nan", solo("x", math.NaN(), "duel", "", nil), ErrTicket},
		{"zero sigma", Ticket{ID: "x", Mode: "duel", Players: []Player{{ID: "x"}}}, ErrTicket},
		{"bad build", solo("x", 25, "duel", "1 4", nil), ErrTicket},
		{"bad region", solo("x", 25, "duel", "", map[string]int{"e u": 3}), ErrTicket},
		{"bad rtt", solo("x", 25, "duel", "", map[string]int{"eu": -3}), ErrTicket},
		{"twice in a party", Ticket{ID: "x", Mode: "5v5", Players: []Player{{ID: "a", Rating: NewRating()}, {ID: "a", Rating: NewRating()}}}, ErrTicket},
		{"no players", Ticket{ID: "x", Mode: "duel"}, ErrTicket},
		{"backfill of wrong shape", Ticket{ID: "x", Mode: "duel", Backfill: &Backfill{Room: "r", Open: []int{1}}}, ErrTicket},
		{"backfill with no seat", Ticket{ID: "x", Mode: "duel", Backfill: &Backfill{Room: "r", Open: []int{0, 0}}}, ErrTicket},
	}
	for _, c := range bad {
		if err := m.Add(c.t, t0); !errors.Is(err, c.err) {
			t.Errorf("%s: %v, want %v", c.name, err, c.err)
		}
	}
	add(t, m, t0, solo("dup", 25, "duel", "", nil))
	if err := m.Add(solo("dup", 25, "duel", "", nil), t0); !errors.Is(err, ErrDuplicate) {
		t.Errorf("a ticket twice: %v", err)
	}
	small := newTestMatcher(t, Config{MaxTickets: 2})
	add(t, small, t0, solo("one", 25, "duel", "", nil), solo("two", 40, "duel", "", nil))
	if err := small.Add(solo("three", 25, "duel", "", nil), t0); !errors.Is(err, ErrFull) {
		t.Errorf("a third ticket past MaxTickets 2: %v, want ErrFull", err)
	}
	if _, err := NewMatcher(Config{Modes: []Mode{{Name: "x", Teams: 1, TeamSize: 1}}}); !errors.Is(err, ErrTicket) {
		t.Errorf("a mode of one team: %v", err)
	}
}

// TestMatcherInvariants feeds a random population through many passes,
// first-come and by skill: no ticket is matched twice, parties stay whole,
// teams are full, builds never meet with the switch closed, and every
// match's region is within every player's reach.
func TestMatcherInvariants(t *testing.T) {
	for _, firstCome := range []bool{false, true} {
		rng := rand.New(rand.NewPCG(1, 2))
		m := newTestMatcher(t, Config{FirstCome: firstCome, Timeout: 30 * time.Second})
		seen := map[string]bool{}
		now := t0
		matched, expired, queued := 0, 0, 0
		for step := range 600 {
			for range rng.IntN(12) {
				mode := []string{"duel", "5v5", "ffa4", "3x3"}[rng.IntN(4)]
				md, _ := m.Mode(mode)
				n := 1 + rng.IntN(md.TeamSize)
				mus := make([]float64, n)
				for i := range mus {
					mus[i] = 25 + 8*rng.NormFloat64()
				}
				tk := party(fmt.Sprint("t", queued), mode, mus...)
				tk.Build = []string{"1.4", "1.5"}[rng.IntN(2)]
				tk.RTT = map[string]int{"eu": 10 + rng.IntN(200), "us": 10 + rng.IntN(200)}
				queued++
				add(t, m, now, tk)
			}
			sites := []Site{{Node: "e", Region: "eu", Free: 3}, {Node: "u", Region: "us", Free: 3}}
			ms, exp := m.Match(now, sites)
			expired += len(exp)
			for _, mt := range ms {
				matched++
				md, _ := m.Mode(mt.Mode)
				if len(mt.Teams) != md.Teams {
					t.Fatalf("%d teams in %s", len(mt.Teams), mt.Mode)
				}
				teamOf := map[string]int{}
				for i, team := range mt.Teams {
					if len(team) != md.TeamSize {
						t.Fatalf("team of %d in %s", len(team), mt.Mode)
					}
					for _, p := range team {
						teamOf[p.ID] = i
					}
				}
				for _, tk := range mt.Tickets {
					if seen[tk.ID] {
						t.Fatalf("ticket %s matched twice", tk.ID)
					}
					seen[tk.ID] = true
					for _, p := range tk.Players {
						if teamOf[p.ID] != teamOf[tk.Players[0].ID] {
							t.Fatalf("party %s split", tk.ID)
						}
					}
					if !firstCome && tk.RTT[mt.Region] > md.rtt(now.Sub(tk.Since)) {
						t.Fatalf("ticket %s placed %d ms away after %v", tk.ID, tk.RTT[mt.Region], now.Sub(tk.Since))
					}
				}
				if len(mt.Builds) != 1 {
					t.Fatalf("builds %v met with the switch closed", mt.Builds)
				}
			}
			now = now.Add(100 * time.Millisecond)
			_ = step
		}
		if matched < 100 {
			t.Errorf("first come %v: %d matches of %d tickets (%d expired)", firstCome, matched, queued, expired)
		}
	}
}

// TestNewPlayersMeetNewPlayersAndTeamsBalance: players whose ratings say
// little (a high Sigma) are kept apart from established ones until they
// have waited; a match whose best split leaves one team far stronger
// waits too.
func TestNewPlayersMeetNewPlayersAndTeamsBalance(t *testing.T) {
	m := newTestMatcher(t, Config{})
	add(t, m, t0, solo("old", 25, "duel", "", nil), Ticket{ID: "new", Mode: "duel", Players: []Player{{ID: "new", Rating: NewRating()}}})
	if got, _ := m.Match(t0, nil); len(got) != 0 {
		t.Fatalf("a new player met an established one at once: %+v", got)
	}
	// Sigma 8.33 against 2: Beta/2 + Beta/8 a second covers it in 8 s.
	if got, _ := m.Match(t0.Add(9*time.Second), nil); len(got) != 1 {
		t.Fatalf("after 9 s: %d matches, want 1", len(got))
	}

	add(t, m, t0, party("stack", "5v5", 28, 28, 28, 28, 28))
	for i := range 5 {
		add(t, m, t0, party(fmt.Sprint("s", i), "5v5", 25))
	}
	// Within Beta of each other, but the teams' means differ by 3: more
	// than a third of the tolerance until it has widened.
	if got, _ := m.Match(t0, nil); len(got) != 0 {
		t.Fatalf("a five-stack 3 points above the others matched at once: %+v", got)
	}
	if got, _ := m.Match(t0.Add(30*time.Second), nil); len(got) != 1 {
		t.Fatalf("after 30 s: %d matches, want 1", len(got))
	}
}
