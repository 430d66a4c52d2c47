package fixed

import "errors"

// Sentinel errors; test them with errors.Is.
var (
	// ErrSyntax is returned by Parse for text that is not a decimal number:
	// an optional sign, digits, and an optional point followed by digits,
	// with at least one digit and nothing else (no spaces, exponents or
	// underscores).
	ErrSyntax = errors.New("fixed: invalid syntax")

	// ErrRange is returned by Parse for a number outside
	// [MinValue, MaxValue].
	ErrRange = errors.New("fixed: value out of range")
)
