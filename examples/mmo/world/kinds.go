package world

import (
	"fmt"
	"math/rand/v2"
	"time"
)

// Looks: the values of interest.Display.Appearance in the demo's world.
const (
	LookPlayer uint32 = iota
	LookBot
	LookDeer
	LookWolf
	LookBoar
	LookBandit
	LookMerchant
	LookGuard
	LookVillager
	numLooks
)

var lookNames = [numLooks]string{"player", "bot", "deer", "wolf", "boar", "bandit", "merchant", "guard", "villager"}

// LookName names an appearance, for the view's legend.
func LookName(look uint32) string {
	if look < numLooks {
		return lookNames[look]
	}
	return "unknown"
}

// Camps: the values of interest.Display.Camp.
const (
	CampNeutral uint8 = iota // city folk and deer
	CampHaoqi                // players of the Haoqi alliance (浩气盟)
	CampEren                 // players of the Eren valley (恶人谷)
	CampWild                 // wolves, boars and bandits
	numCamps
)

var campNames = [numCamps]string{"neutral", "Haoqi", "Eren", "wild"}

// CampName names a camp.
func CampName(camp uint8) string {
	if camp < numCamps {
		return campNames[camp]
	}
	return "unknown"
}

// npcKind describes one kind of NPC: how it looks, where it lives and how
// it wanders. Speeds are in metres a second (a region is 16 m, as in the
// seed) and converted to the world's units per frame.
type npcKind struct {
	look   uint32
	name   string
	camp   uint8
	city   bool    // lives in a city, and stays in it
	roam   float64 // how far from home it wanders, in regions
	speed  [2]float64
	pause  [2]time.Duration
	weight int // share among the kinds of its habitat
	named  bool
}

var npcKinds = []npcKind{
	{look: LookDeer, name: "Deer", camp: CampNeutral, roam: 2, speed: [2]float64{3, 6}, pause: [2]time.Duration{time.Second, 6 * time.Second}, weight: 35},
	{look: LookWolf, name: "Grey wolf", camp: CampWild, roam: 2, speed: [2]float64{3, 7}, pause: [2]time.Duration{time.Second, 4 * time.Second}, weight: 25},
	{look: LookBoar, name: "Wild boar", camp: CampWild, roam: 1, speed: [2]float64{2, 4}, pause: [2]time.Duration{2 * time.Second, 8 * time.Second}, weight: 20},
	{look: LookBandit, name: "Bandit", camp: CampWild, roam: 1.5, speed: [2]float64{1.5, 3}, pause: [2]time.Duration{2 * time.Second, 6 * time.Second}, weight: 20, named: true},
	{look: LookMerchant, name: "Merchant", camp: CampNeutral, city: true, roam: 0.5, speed: [2]float64{1, 1.5}, pause: [2]time.Duration{3 * time.Second, 10 * time.Second}, weight: 30, named: true},
	{look: LookGuard, name: "Guard", camp: CampNeutral, city: true, roam: 1.5, speed: [2]float64{1.5, 2}, pause: [2]time.Duration{time.Second, 3 * time.Second}, weight: 30, named: true},
	{look: LookVillager, name: "", camp: CampNeutral, city: true, roam: 1, speed: [2]float64{1, 2}, pause: [2]time.Duration{2 * time.Second, 8 * time.Second}, weight: 40, named: true},
}

// cityShare is the share of NPCs that live in cities when the map has any.
const cityShare = 0.08

var (
	surnames = []string{"Li", "Wang", "Zhang", "Liu", "Chen", "Yang", "Zhao", "Huang", "Zhou", "Wu",
		"Xu", "Sun", "Ma", "Zhu", "Hu", "Guo", "He", "Lin", "Luo", "Gao", "Ye", "Tang", "Xie", "Mo"}
	given = []string{"Ming", "Hua", "Lan", "Jun", "Fei", "Yun", "Xue", "Feng", "Qing", "Long",
		"Wei", "Ling", "Bai", "Shan", "Yue", "Hong"}
)

// pickKind returns a kind of the habitat (city or field), by weight.
func pickKind(rng *rand.Rand, city bool) int {
	total := 0
	for _, k := range npcKinds {
		if k.city == city {
			total += k.weight
		}
	}
	n, last := rng.IntN(total), 0
	for i, k := range npcKinds {
		if k.city != city {
			continue
		}
		if n < k.weight {
			return i
		}
		n -= k.weight
		last = i
	}
	return last
}

// npcName returns a display name for an NPC of kind k: a kind name, or a
// kind and a person's name for people.
func npcName(rng *rand.Rand, k *npcKind) string {
	if !k.named {
		return k.name
	}
	person := surnames[rng.IntN(len(surnames))] + " " + given[rng.IntN(len(given))]
	if k.name == "" {
		return person
	}
	return fmt.Sprintf("%s %s", k.name, person)
}
