// Package game is what every process of the worlds example shares: the
// two maps (the field, one seamless map cut into two cells, and the town,
// a map of capped lines), the portals between them, where players arrive,
// and the guild records the lobby shares with the world processes over
// the replica.
package game
