package matchmaker

import (
	"errors"
	"math"
	"math/rand/v2"
	"reflect"
	"sort"
	"testing"
)

func newTeam(n int) []Rating {
	t := make([]Rating, n)
	for i := range t {
		t[i] = NewRating()
	}
	return t
}

func cloneTeams(teams [][]Rating) [][]Rating {
	out := make([][]Rating, len(teams))
	for i, t := range teams {
		out[i] = append([]Rating(nil), t...)
	}
	return out
}

func TestRateOneVsOne(t *testing.T) {
	tests := []struct {
		name  string
		ranks []int
		want  int // sign of the first player's Mu change
	}{
		{"first wins", []int{0, 1}, +1},
		{"second wins", []int{1, 0}, -1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			start := NewRating()
			got, err := Rate([][]Rating{{start}, {start}}, tt.ranks)
			if err != nil {
				t.Fatal(err)
			}
			d0 := got[0][0].Mu - start.Mu
			d1 := got[1][0].Mu - start.Mu
			if math.Copysign(1, d0) != float64(tt.want) || d0 == 0 {
				t.Errorf("first player's Mu change = %v, want sign %d", d0, tt.want)
			}
			if math.Abs(d0+d1) > 1e-9 {
				t.Errorf("Mu changes %v and %v are not opposite", d0, d1)
			}
			for i := range got {
				if s := got[i][0].Sigma; !(s < start.Sigma) {
					t.Errorf("team %d Sigma = %v, want < %v", i, s, start.Sigma)
				}
			}
		})
	}
}

func TestRateDraw(t *testing.T) {
	tests := []struct {
		name  string
		teams [][]Rating
		ranks []int
	}{
		{"1v1 new players", [][]Rating{newTeam(1), newTeam(1)}, []int{0, 0}},
		{"1v1 equal veterans", [][]Rating{{{30, 2}}, {{30, 2}}}, []int{3, 3}},
		{"3v3", [][]Rating{newTeam(3), newTeam(3)}, []int{0, 0}},
		{"3-way", [][]Rating{newTeam(1), newTeam(1), newTeam(1)}, []int{0, 0, 0}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Rate(tt.teams, tt.ranks)
			if err != nil {
				t.Fatal(err)
			}
			for i, team := range got {
				for j, r := range team {
					before := tt.teams[i][j]
					if math.Abs(r.Mu-before.Mu) > 1e-9 {
						t.Errorf("team %d player %d Mu %v -> %v, want unchanged", i, j, before.Mu, r.Mu)
					}
					if !(r.Sigma < before.Sigma) {
						t.Errorf("team %d player %d Sigma %v -> %v, want smaller", i, j, before.Sigma, r.Sigma)
					}
				}
			}
		})
	}
}

func TestRateUpsetMovesMore(t *testing.T) {
	tests := []struct {
		name      string
		low, high Rating
	}{
		{"close", Rating{23, 5}, Rating{27, 5}},
		{"far", Rating{15, 3}, Rating{35, 3}},
		{"new vs veteran", NewRating(), Rating{35, 2}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			teams := [][]Rating{{tt.low}, {tt.high}}
			upset, err := Rate(teams, []int{0, 1})
			if err != nil {
				t.Fatal(err)
			}
			expected, err := Rate(teams, []int{1, 0})
			if err != nil {
				t.Fatal(err)
			}
			upLow := upset[0][0].Mu - tt.low.Mu
			upHigh := tt.high.Mu - upset[1][0].Mu
			expLow := tt.low.Mu - expected[0][0].Mu
			expHigh := expected[1][0].Mu - tt.high.Mu
			if !(upLow > 0 && upHigh > 0 && expLow > 0 && expHigh > 0) {
				t.Fatalf("wrong directions: upset %+v, expected %+v", upset, expected)
			}
			if !(upLow > expLow) {
				t.Errorf("low player: upset gain %v <= expected loss %v", upLow, expLow)
			}
			if !(upHigh > expHigh) {
				t.Errorf("high player: upset loss %v <= expected gain %v", upHigh, expHigh)
			}
		})
	}
}

func TestRateRankOrder(t *testing.T) {
	tests := []struct {
		name  string
		teams [][]Rating
		ranks []int
	}{
		{"5v5", [][]Rating{newTeam(5), newTeam(5)}, []int{0, 1}},
		{"5v5 reversed", [][]Rating{newTeam(5), newTeam(5)}, []int{1, 0}},
		{"4-player free-for-all", [][]Rating{newTeam(1), newTeam(1), newTeam(1), newTeam(1)}, []int{0, 1, 2, 3}},
		{"4-player shuffled", [][]Rating{newTeam(1), newTeam(1), newTeam(1), newTeam(1)}, []int{2, 0, 3, 1}},
		{"4 teams of 2", [][]Rating{newTeam(2), newTeam(2), newTeam(2), newTeam(2)}, []int{0, 1, 2, 3}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Rate(tt.teams, tt.ranks)
			if err != nil {
				t.Fatal(err)
			}
			for a := range got {
				// Teammates with equal ratings stay equal.
				for _, r := range got[a] {
					if math.Abs(r.Mu-got[a][0].Mu) > 1e-9 {
						t.Errorf("team %d teammates differ: %+v", a, got[a])
					}
				}
				for b := range got {
					if tt.ranks[a] < tt.ranks[b] && !(got[a][0].Mu > got[b][0].Mu) {
						t.Errorf("rank %d team Mu %v not above rank %d team Mu %v",
							tt.ranks[a], got[a][0].Mu, tt.ranks[b], got[b][0].Mu)
					}
				}
			}
		})
	}
}

func TestRateBadInput(t *testing.T) {
	good := []Rating{NewRating()}
	tests := []struct {
		name  string
		teams [][]Rating
		ranks []int
	}{
		{"no teams", nil, nil},
		{"one team", [][]Rating{good}, []int{0}},
		{"too few ranks", [][]Rating{good, good}, []int{0}},
		{"too many ranks", [][]Rating{good, good}, []int{0, 1, 2}},
		{"empty team", [][]Rating{good, {}}, []int{0, 1}},
		{"nil team", [][]Rating{nil, good}, []int{0, 1}},
		{"NaN Mu", [][]Rating{good, {{math.NaN(), 1}}}, []int{0, 1}},
		{"Inf Mu", [][]Rating{good, {{math.Inf(1), 1}}}, []int{0, 1}},
		{"NaN Sigma", [][]Rating{good, {{25, math.NaN()}}}, []int{0, 1}},
		{"Inf Sigma", [][]Rating{good, {{25, math.Inf(1)}}}, []int{0, 1}},
		{"zero Sigma", [][]Rating{good, {{25, 0}}}, []int{0, 1}},
		{"negative Sigma", [][]Rating{{NewRating(), {25, -1}}, good}, []int{0, 1}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Rate(tt.teams, tt.ranks)
			if !errors.Is(err, ErrRating) {
				t.Fatalf("err = %v, want ErrRating", err)
			}
			if got != nil {
				t.Errorf("got %v with error, want nil", got)
			}
		})
	}
}

func TestRateDoesNotModifyInput(t *testing.T) {
	tests := []struct {
		name  string
		teams [][]Rating
		ranks []int
	}{
		{"1v1", [][]Rating{{{20, 4}}, {{28, 6}}}, []int{0, 1}},
		{"2v3 draw", [][]Rating{{{20, 4}, {25, 8}}, {{30, 2}, {22, 3}, {18, 7}}}, []int{0, 0}},
		{"free-for-all", [][]Rating{{{20, 4}}, {{25, 5}}, {{30, 6}}}, []int{2, 0, 1}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			teams := cloneTeams(tt.teams)
			ranks := append([]int(nil), tt.ranks...)
			got, err := Rate(teams, ranks)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(teams, tt.teams) || !reflect.DeepEqual(ranks, tt.ranks) {
				t.Errorf("input modified: teams %v ranks %v", teams, ranks)
			}
			got[0][0].Mu = -1000 // the result must not alias the input
			if teams[0][0].Mu == -1000 {
				t.Error("result shares memory with input")
			}
		})
	}
}

func TestWinProbability(t *testing.T) {
	weak := []Rating{{20, 5}, {22, 5}}
	strong := []Rating{{28, 5}, {30, 5}}
	tests := []struct {
		name string
		a, b []Rating
		want string // "even", "a", "b"
	}{
		{"new 1v1", newTeam(1), newTeam(1), "even"},
		{"new 5v5", newTeam(5), newTeam(5), "even"},
		{"stronger first", strong, weak, "a"},
		{"stronger second", weak, strong, "b"},
		{"more players", newTeam(3), newTeam(2), "a"},
		{"higher Mu, surer", []Rating{{30, 1}}, []Rating{{20, 8}}, "a"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := WinProbability(tt.a, tt.b)
			q := WinProbability(tt.b, tt.a)
			switch tt.want {
			case "even":
				if math.Abs(p-0.5) > 1e-12 {
					t.Errorf("p = %v, want 0.5", p)
				}
			case "a":
				if !(p > 0.5 && p < 1) {
					t.Errorf("p = %v, want in (0.5, 1)", p)
				}
			case "b":
				if !(p < 0.5 && p > 0) {
					t.Errorf("p = %v, want in (0, 0.5)", p)
				}
			}
			if math.Abs(p+q-1) > 1e-12 {
				t.Errorf("p(a,b)+p(b,a) = %v, want 1", p+q)
			}
		})
	}
}

// TestRateConverges plays many 1v1 games between players of known true
// skill and checks the ratings end up in the true order.
func TestRateConverges(t *testing.T) {
	const players, games = 20, 300
	rng := rand.New(rand.NewPCG(1, 2))
	skill := make([]float64, players)
	ratings := make([]Rating, players)
	for i := range skill {
		skill[i] = 10 + 1.5*float64(i)
		ratings[i] = NewRating()
	}
	rng.Shuffle(players, func(i, j int) { skill[i], skill[j] = skill[j], skill[i] })

	for range games {
		a := rng.IntN(players)
		b := rng.IntN(players - 1)
		if b >= a {
			b++
		}
		perfA := skill[a] + rng.NormFloat64()*Beta
		perfB := skill[b] + rng.NormFloat64()*Beta
		ranks := []int{0, 1}
		if perfB > perfA {
			ranks = []int{1, 0}
		}
		got, err := Rate([][]Rating{{ratings[a]}, {ratings[b]}}, ranks)
		if err != nil {
			t.Fatal(err)
		}
		ratings[a], ratings[b] = got[0][0], got[1][0]
	}

	mus := make([]float64, players)
	for i, r := range ratings {
		mus[i] = r.Mu
	}
	rho := spearman(mus, skill)
	t.Logf("Spearman rank correlation after %d games: %.3f", games, rho)
	if rho <= 0.9 {
		t.Errorf("Spearman rank correlation = %.3f, want > 0.9", rho)
	}
}

// spearman returns the rank correlation of x and y (no ties expected).
func spearman(x, y []float64) float64 {
	rx, ry := rankOf(x), rankOf(y)
	n := float64(len(x))
	d2 := 0.0
	for i := range rx {
		d := rx[i] - ry[i]
		d2 += d * d
	}
	return 1 - 6*d2/(n*(n*n-1))
}

func rankOf(v []float64) []float64 {
	idx := make([]int, len(v))
	for i := range idx {
		idx[i] = i
	}
	sort.Slice(idx, func(a, b int) bool { return v[idx[a]] < v[idx[b]] })
	r := make([]float64, len(v))
	for rank, i := range idx {
		r[i] = float64(rank)
	}
	return r
}
