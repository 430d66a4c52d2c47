package sample

type msg struct{}

func decodeReached(b []byte) int   { return len(b) }
func decodeIndirect(b []byte) int  { return decodeReached(b) }
func decodeForgotten(b []byte) int { return len(b) }
func (m *msg) parse(b []byte) int  { return len(b) }
func encode(dst []byte) []byte     { return dst }
