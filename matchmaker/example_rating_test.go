package matchmaker_test

import (
	"fmt"

	"github.com/tongbu/tongbu/matchmaker"
)

func ExampleRate() {
	alice, bob := matchmaker.NewRating(), matchmaker.NewRating()

	// Alice (team 0) beats Bob (team 1).
	teams, err := matchmaker.Rate([][]matchmaker.Rating{{alice}, {bob}}, []int{0, 1})
	if err != nil {
		panic(err)
	}
	alice, bob = teams[0][0], teams[1][0]

	fmt.Printf("alice %.2f\n", alice.Conservative())
	fmt.Printf("bob   %.2f\n", bob.Conservative())
	// Output:
	// alice 3.44
	// bob   -1.83
}

// ExampleRateMatch rates a 2v2 after team 1 won: the winners rise, the
// losers fall, and every player's uncertainty shrinks.
func ExampleRateMatch() {
	r := matchmaker.Rating{Mu: 25, Sigma: 3}
	teams := [][]matchmaker.Player{
		{{ID: "ann", Rating: r}, {ID: "bo", Rating: r}},
		{{ID: "cy", Rating: r}, {ID: "di", Rating: r}},
	}
	rated, err := matchmaker.RateMatch(teams, []int{1, 0}) // team 1 first
	if err != nil {
		panic(err)
	}
	for _, team := range rated {
		for _, p := range team {
			fmt.Printf("%s %.2f ± %.2f\n", p.ID, p.Rating.Mu, p.Rating.Sigma)
		}
	}
	// Output:
	// ann 24.46 ± 2.98
	// bo 24.46 ± 2.98
	// cy 25.54 ± 2.98
	// di 25.54 ± 2.98
}
