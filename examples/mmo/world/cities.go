package world

import "github.com/tongbu/tongbu/interest"

// City is a block of regions the demo's world counts as a city: human
// players spawn there, merchants, guards and villagers live there, and the
// state-sync policy treats its regions as city regions (interest.Config.City).
type City struct {
	Name string
	// Min and Max are the block's corner regions, both inside it.
	Min, Max interest.Region
}

// Contains reports whether region r is part of the city.
func (c City) Contains(r interest.Region) bool {
	return r.X >= c.Min.X && r.X <= c.Max.X && r.Y >= c.Min.Y && r.Y <= c.Max.Y
}

// Bounds returns the city's extent in world units: its lowest and highest
// positions.
func (c City) Bounds(regionSize int) (lo, hi interest.Vec) {
	lo = interest.Vec{X: int32(c.Min.X * regionSize), Y: int32(c.Min.Y * regionSize)}
	hi = interest.Vec{X: int32((c.Max.X+1)*regionSize - 1), Y: int32((c.Max.Y+1)*regionSize - 1)}
	return lo, hi
}

// cityPlaces are the demo's cities, named after cities of wuxia tales, placed at
// fractions of the map.
var cityPlaces = []struct {
	name   string
	fx, fy float64
}{
	{"Chang'an", 0.5, 0.5},
	{"Luoyang", 0.22, 0.28},
	{"Yangzhou", 0.78, 0.32},
	{"Chengdu", 0.25, 0.76},
	{"Daoxiang", 0.76, 0.78},
}

// Cities returns the demo's cities on a map of width x height regions:
// five blocks of 3 x 3 regions on a map of 12 x 12 or more, one region at
// the centre on a smaller one. The same map size gives the same cities on
// the server and in the view.
func Cities(width, height int) []City {
	if width < 1 || height < 1 {
		return nil
	}
	if width < 12 || height < 12 {
		c := interest.Region{X: width / 2, Y: height / 2}
		return []City{{Name: cityPlaces[0].name, Min: c, Max: c}}
	}
	out := make([]City, 0, len(cityPlaces))
	for _, p := range cityPlaces {
		cx := min(max(int(p.fx*float64(width)), 1), width-2)
		cy := min(max(int(p.fy*float64(height)), 1), height-2)
		out = append(out, City{
			Name: p.name,
			Min:  interest.Region{X: cx - 1, Y: cy - 1},
			Max:  interest.Region{X: cx + 1, Y: cy + 1},
		})
	}
	return out
}

// CityAt returns the city holding region r, if any.
func CityAt(cities []City, r interest.Region) (City, bool) {
	for _, c := range cities {
		if c.Contains(r) {
			return c, true
		}
	}
	return City{}, false
}

// InterestConfig returns the demo's world configuration: c with interest's
// defaults filled in (a 64 x 64 region map unless c says otherwise) and,
// unless c sets one, a City function marking the regions of Cities. The
// server and the view both call it, so both draw the same cities.
func InterestConfig(c interest.Config) interest.Config {
	c = c.WithDefaults()
	if c.City == nil {
		cities := Cities(c.Width, c.Height)
		c.City = func(r interest.Region) bool {
			_, ok := CityAt(cities, r)
			return ok
		}
	}
	return c
}
