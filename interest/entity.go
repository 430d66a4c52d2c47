package interest

// ID names an entity in a world: 1 .. MaxEntities-1; 0 is no entity. The
// world assigns IDs and reuses a freed one only after every other free ID,
// so a reused ID is seldom one a client still remembers.
type ID uint32

// Kind is what an entity is, as the seed sorts scene objects.
type Kind uint8

// Entity kinds.
const (
	Player Kind = iota
	NPC
	Doodad
	Bullet
	numKinds
)

var kindNames = [numKinds]string{"player", "npc", "doodad", "bullet"}

func (k Kind) String() string {
	if k < numKinds {
		return kindNames[k]
	}
	return "kind?"
}

// Logic is an entity's logic data: what every client
// near it needs and what changes often. Life, Mana and Rage are
// percentages, 0..100; State is the character's state-machine state,
// 0..31; Magic is the visible magic state, Config.MagicBits wide.
type Logic struct {
	Pos, Dest        Vec
	Speed            int32 // units per frame toward Dest
	State            uint8
	Combat           bool
	Life, Mana, Rage uint8
	Magic            uint32
}

// Moving reports whether the entity is on its way somewhere.
func (l *Logic) Moving() bool { return l.Pos != l.Dest && l.Speed > 0 }

// MaxName bounds a display name in bytes.
const MaxName = 32

// Display is an entity's display data: what it looks
// like, its name and its camp. It rarely changes: clients fetch it once
// per version and cache it.
type Display struct {
	Appearance uint32
	Name       string
	Camp       uint8
}
