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
