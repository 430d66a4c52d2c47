package codec

// AppendPart exposes appendPart so that the external tests can build and
// re-encode split frames.
var AppendPart = appendPart
