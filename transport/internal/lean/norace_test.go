//go:build !race && !js

package lean

const raceEnabled = false
