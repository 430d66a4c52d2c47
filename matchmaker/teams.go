package matchmaker

import (
	"cmp"
	"math"
	"slices"
)

// Splitting a match's tickets into teams: parties whole, skill as even as
// the parties allow.

// imbalance returns how far apart the teams' mean Mu stand: the largest
// less the smallest.
func imbalance(chosen []*entry, teams [][]int) float64 {
	lo, hi := math.Inf(1), math.Inf(-1)
	for _, team := range teams {
		var s float64
		n := 0
		for _, k := range team {
			s += chosen[k].mu * float64(chosen[k].size())
			n += chosen[k].size()
		}
		lo, hi = min(lo, s/float64(n)), max(hi, s/float64(n))
	}
	return hi - lo
}

// assign splits the tickets chosen into md's teams, parties whole, as even
// in skill as it finds: the indexes of chosen by team, or nil if they do
// not fit.
func assign(chosen []*entry, md *Mode) [][]int {
	n := len(chosen)
	if md.TeamSize == 1 {
		teams := make([][]int, n)
		for i := range chosen {
			teams[i] = []int{i}
		}
		slices.SortFunc(teams, func(a, b []int) int { return cmp.Compare(chosen[b[0]].mu, chosen[a[0]].mu) })
		return teams
	}
	sum := func(i int) float64 { return chosen[i].mu * float64(chosen[i].size()) }
	if md.Teams == 2 && n <= 16 {
		// Every split with the first ticket on team 0: the most even.
		best, bestDiff := -1, math.Inf(1)
		for set := 0; set < 1<<(n-1); set++ {
			s := set<<1 | 1
			size, diff := 0, 0.0
			for i := range n {
				if s&(1<<i) != 0 {
					size += chosen[i].size()
					diff += sum(i)
				} else {
					diff -= sum(i)
				}
			}
			if size == md.TeamSize && math.Abs(diff) < bestDiff {
				best, bestDiff = s, math.Abs(diff)
			}
		}
		if best < 0 {
			return nil
		}
		teams := [][]int{{}, {}}
		for i := range n {
			t := 1
			if best&(1<<i) != 0 {
				t = 0
			}
			teams[t] = append(teams[t], i)
		}
		return teams
	}
	// The largest parties first, each to the weakest team it fits.
	idx := make([]int, n)
	for i := range idx {
		idx[i] = i
	}
	slices.SortFunc(idx, func(a, b int) int {
		return cmp.Or(cmp.Compare(chosen[b].size(), chosen[a].size()), cmp.Compare(chosen[b].mu, chosen[a].mu))
	})
	teams := make([][]int, md.Teams)
	room := make([]int, md.Teams)
	skill := make([]float64, md.Teams)
	for i := range room {
		room[i] = md.TeamSize
	}
	for _, k := range idx {
		t := -1
		for i := range teams {
			if room[i] >= chosen[k].size() && (t < 0 || skill[i] < skill[t]) {
				t = i
			}
		}
		if t < 0 {
			return pack(chosen, md)
		}
		teams[t] = append(teams[t], k)
		room[t] -= chosen[k].size()
		skill[t] += sum(k)
	}
	return teams
}

// pack fits the parties into md's teams by search, blind to skill: the
// greedy split failed, but one may exist.
func pack(chosen []*entry, md *Mode) [][]int {
	idx := make([]int, len(chosen))
	for i := range idx {
		idx[i] = i
	}
	slices.SortFunc(idx, func(a, b int) int { return cmp.Compare(chosen[b].size(), chosen[a].size()) })
	room := make([]int, md.Teams)
	for i := range room {
		room[i] = md.TeamSize
	}
	at := make([]int, len(idx))
	steps := 0
	var place func(j int) bool
	place = func(j int) bool {
		if j == len(idx) {
			return true
		}
		if steps++; steps > 10000 {
			return false
		}
		for t := range room {
			if room[t] >= chosen[idx[j]].size() && (t == 0 || room[t] != room[t-1]) {
				room[t] -= chosen[idx[j]].size()
				at[j] = t
				if place(j + 1) {
					return true
				}
				room[t] += chosen[idx[j]].size()
			}
		}
		return false
	}
	if !place(0) {
		return nil
	}
	teams := make([][]int, md.Teams)
	for j, k := range idx {
		teams[at[j]] = append(teams[at[j]], k)
	}
	return teams
}
