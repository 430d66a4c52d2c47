package matchmaker

import (
	"errors"
	"fmt"
	"math"
)

// Beta is the spread of one game's performance around a player's skill
// (25/6): how far a player's result can swing from one game to the next.
// It sets the scale of rating differences.
const Beta = 25.0 / 6

// kappa is the smallest factor a single match may multiply a player's
// variance by, so Sigma never collapses to zero.
const kappa = 0.0001

// ErrRating is returned (wrapped with detail) when Rate gets bad input.
// Test for it with errors.Is.
var ErrRating = errors.New("matchmaker: bad rating input")

// Rating is a player's skill as the matchmaker sees it: Mu the estimate,
// Sigma its uncertainty (one standard deviation). New players have a large
// Sigma that shrinks as they play.
type Rating struct {
	Mu, Sigma float64
}

// NewRating returns the rating of a new player: Mu 25, Sigma 25/3.
func NewRating() Rating {
	return Rating{Mu: 25, Sigma: 25.0 / 3}
}

// Conservative returns Mu - 3*Sigma, the figure to show on a leaderboard:
// the player is almost surely at least this good. It starts at 0 and rises
// as the player wins and the matchmaker grows surer of them.
func (r Rating) Conservative() float64 {
	return r.Mu - 3*r.Sigma
}

// Rate returns the teams' new ratings after a match, using the Weng-Lin
// Plackett-Luce model (the default of OpenSkill).
//
// teams[i] are the ratings of team i's players and ranks[i] the team's
// place: lower is better (0 = first), equal ranks are a draw. There must be
// at least two teams, one rank per team, and at least one player per team.
// The result has the same shape as teams; the input is not modified.
//
// Rate returns an error wrapping ErrRating for mismatched lengths, fewer
// than two teams, an empty team, a NaN or infinite Mu or Sigma, or a Sigma
// that is not positive.
func Rate(teams [][]Rating, ranks []int) ([][]Rating, error) {
	if len(teams) != len(ranks) {
		return nil, fmt.Errorf("%w: %d teams but %d ranks", ErrRating, len(teams), len(ranks))
	}
	if len(teams) < 2 {
		return nil, fmt.Errorf("%w: need at least 2 teams, got %d", ErrRating, len(teams))
	}
	for i, team := range teams {
		if len(team) == 0 {
			return nil, fmt.Errorf("%w: team %d has no players", ErrRating, i)
		}
		for j, r := range team {
			if math.IsNaN(r.Mu) || math.IsInf(r.Mu, 0) {
				return nil, fmt.Errorf("%w: team %d player %d: Mu is %v", ErrRating, i, j, r.Mu)
			}
			if math.IsNaN(r.Sigma) || math.IsInf(r.Sigma, 0) || r.Sigma <= 0 {
				return nil, fmt.Errorf("%w: team %d player %d: Sigma is %v", ErrRating, i, j, r.Sigma)
			}
		}
	}

	n := len(teams)
	mu := make([]float64, n)     // team skill: sum of players' Mu
	sigma2 := make([]float64, n) // team variance: sum of players' Sigma^2
	c2 := 0.0
	for i, team := range teams {
		for _, r := range team {
			mu[i] += r.Mu
			sigma2[i] += r.Sigma * r.Sigma
		}
		c2 += sigma2[i] + Beta*Beta
	}
	c := math.Sqrt(c2)

	// e[i] = exp(mu_i/c), shifted by the largest exponent so it cannot
	// overflow; only ratios of these values are used, so the shift cancels.
	maxExp := math.Inf(-1)
	for i := range mu {
		maxExp = math.Max(maxExp, mu[i]/c)
	}
	e := make([]float64, n)
	for i := range mu {
		e[i] = math.Exp(mu[i]/c - maxExp)
	}

	// sumQ[q]: sum of e over teams placed at or below q (rank >= rank_q).
	// tied[q]: number of teams sharing q's rank (A_q in the paper).
	sumQ := make([]float64, n)
	tied := make([]float64, n)
	for q := range n {
		for s := range n {
			if ranks[s] >= ranks[q] {
				sumQ[q] += e[s]
			}
			if ranks[s] == ranks[q] {
				tied[q]++
			}
		}
	}

	out := make([][]Rating, n)
	for i, team := range teams {
		omega, delta := 0.0, 0.0
		for q := range n {
			if ranks[q] > ranks[i] {
				continue
			}
			p := e[i] / sumQ[q] // chance i comes out top among those at or below q
			if q == i {
				omega += (1 - p) / tied[q]
			} else {
				omega -= p / tied[q]
			}
			delta += p * (1 - p) / tied[q]
		}
		omega *= sigma2[i] / c
		gamma := math.Sqrt(sigma2[i]) / c
		delta *= gamma * sigma2[i] / c2

		out[i] = make([]Rating, len(team))
		for j, r := range team {
			share := r.Sigma * r.Sigma / sigma2[i]
			out[i][j] = Rating{
				Mu:    r.Mu + share*omega,
				Sigma: r.Sigma * math.Sqrt(math.Max(1-share*delta, kappa)),
			}
		}
	}
	return out, nil
}

// WinProbability returns the probability that team a beats team b, from
// 0 to 1: 0.5 for an even match. Use it to judge how fair a proposed match
// is. Two empty teams give 0.5.
func WinProbability(a, b []Rating) float64 {
	diff, variance := 0.0, float64(len(a)+len(b))*Beta*Beta
	for _, r := range a {
		diff += r.Mu
		variance += r.Sigma * r.Sigma
	}
	for _, r := range b {
		diff -= r.Mu
		variance += r.Sigma * r.Sigma
	}
	if variance == 0 {
		return 0.5
	}
	// Standard normal CDF of diff/sqrt(variance).
	return 0.5 * math.Erfc(-diff/math.Sqrt(2*variance))
}

// RateMatch rates a match's players after it ends: teams as a match or an
// Assignment lists them (Match.Teams), ranks[i] the place of team i (0 =
// first; equal ranks are a draw). It returns the same players with their
// new ratings, for the game to store and put in their next tickets.
//
// The ranks come from the game's result: in a lockstep room that verifies
// events, the agreed events of Room.Result (the kills, the goals), which
// no single client can forge.
func RateMatch(teams [][]Player, ranks []int) ([][]Player, error) {
	rs := make([][]Rating, len(teams))
	for i, team := range teams {
		rs[i] = make([]Rating, len(team))
		for j, p := range team {
			rs[i][j] = p.Rating
		}
	}
	rated, err := Rate(rs, ranks)
	if err != nil {
		return nil, err
	}
	out := make([][]Player, len(teams))
	for i, team := range teams {
		out[i] = make([]Player, len(team))
		for j, p := range team {
			out[i][j] = Player{ID: p.ID, Rating: rated[i][j]}
		}
	}
	return out, nil
}
