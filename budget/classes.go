package budget

import (
	"sync/atomic"
	"unicode"
)

// The general way of cutting pieces asks of each character outside ASCII
// whether it is a letter of either case, a number or a space. Unicode's
// range tables answer by binary search, several steps a character; for the
// characters of the Basic Multilingual Plane (every script in common use)
// a table of their classes, built once, answers with one load.

// Classes of a character, as o200kPattern sees them.
const (
	uUpperish = 1 << iota // [\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]
	uLowerish             // [\p{Ll}\p{Lm}\p{Lo}\p{M}]
	uLetter               // \p{L}
	uNumber               // \p{N}
	uSpace                // \s (unicode.IsSpace)
)

// bmpClasses returns the classes of the characters below U+10000, built on
// first use (about 0.2 ms) from the same tables as astralClasses.
func bmpClasses() *[0x10000]uint8 {
	if t := bmpTable.Load(); t != nil {
		return t
	}
	return buildBMPClasses()
}

// buildBMPClasses builds the table bmpClasses returns.
func buildBMPClasses() *[0x10000]uint8 {
	t := new([0x10000]uint8)
	for _, k := range astralClasses {
		for _, tab := range k.tables {
			for _, r := range tab.R16 {
				for c := uint32(r.Lo); c <= uint32(r.Hi); c += uint32(r.Stride) {
					t[c] |= k.class
				}
			}
		}
	}
	bmpTable.CompareAndSwap(nil, t) // two first uses build the same table
	return bmpTable.Load()
}

var bmpTable atomic.Pointer[[0x10000]uint8]

// classOf returns the classes of r.
func classOf(r rune) uint8 {
	if uint32(r) < 0x10000 {
		return bmpClasses()[r]
	}
	return astralClassOf(r)
}

// astralClassOf is classOf for a character past U+FFFF.
func astralClassOf(r rune) uint8 {
	var c uint8
	for _, k := range astralClasses {
		if unicode.IsOneOf(k.tables, r) {
			c |= k.class
		}
	}
	return c
}

// astralClasses are the classes' tables: bmpClasses is built from them,
// and they answer for the characters past the Basic Multilingual Plane.
var astralClasses = []struct {
	class  uint8
	tables []*unicode.RangeTable
}{
	{uUpperish, []*unicode.RangeTable{unicode.Lu, unicode.Lt, unicode.Lm, unicode.Lo, unicode.M}},
	{uLowerish, []*unicode.RangeTable{unicode.Ll, unicode.Lm, unicode.Lo, unicode.M}},
	{uLetter, []*unicode.RangeTable{unicode.L}},
	{uNumber, []*unicode.RangeTable{unicode.N}},
	{uSpace, []*unicode.RangeTable{unicode.White_Space}},
}
