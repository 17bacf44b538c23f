package tracer

import (
	"bytes"
	"encoding/binary"
)

// The magic numbers of the pclntab formats of Go 1.18 and Go 1.20 and
// newer (runtime/symtab.go's pcHeader), which share the parts read here.
const (
	pclntabMagic118 = 0xfffffff0
	pclntabMagic120 = 0xfffffff1
)

// funcEntries finds the entry addresses of the functions named in names
// in a little-endian Go 1.18+ .gopclntab whose text starts at text (of
// a name given twice, as an ABI wrapper's is, the first in the table). It
// reads only the function table and the names, where debug/gosym's
// NewTable makes an object of every function of the binary: the test
// binary waits, paused, for this. ok is false for a format it does not
// read; the caller then uses debug/gosym.
//
// The layout read (runtime/symtab.go): a header of magic (4 bytes), two
// pad bytes, the instruction size quantum, the pointer size, then
// pointer-sized words: the number of functions, of files, the text
// start, and the offsets from the header of the function names, the
// compilation units, the files, the pc tables and the function table.
// The function table is nfunc+1 pairs of 32-bit (entry offset from the
// text start, offset of the function's _func from the table); a _func
// starts with its 32-bit entry offset and 32-bit name offset.
func funcEntries(tab []byte, text uint64, names []string) (entries map[string]uint64, ok bool) {
	if len(tab) < 8 {
		return nil, false
	}
	magic := binary.LittleEndian.Uint32(tab)
	ptr := int(tab[7])
	if magic != pclntabMagic118 && magic != pclntabMagic120 || tab[4] != 0 || tab[5] != 0 || ptr != 8 {
		return nil, false
	}
	word := func(i int) (uint64, bool) {
		at := 8 + i*ptr
		if at+ptr > len(tab) {
			return 0, false
		}
		return binary.LittleEndian.Uint64(tab[at:]), true
	}
	nfunc, ok1 := word(0)
	nameOff, ok2 := word(3)
	funcOff, ok3 := word(7)
	if !ok1 || !ok2 || !ok3 || nameOff >= uint64(len(tab)) || funcOff >= uint64(len(tab)) ||
		nfunc > uint64(len(tab)-int(funcOff))/8 {
		return nil, false
	}
	funcnames, functab := tab[nameOff:], tab[funcOff:]
	want := make(map[string]bool, len(names))
	for _, n := range names {
		want[n] = true
	}
	entries = make(map[string]uint64, len(names))
	for i := uint64(0); i < nfunc && len(entries) < len(want); i++ {
		off := uint64(binary.LittleEndian.Uint32(functab[i*8+4:]))
		if off+8 > uint64(len(functab)) {
			return nil, false
		}
		fn := functab[off:]
		no := uint64(binary.LittleEndian.Uint32(fn[4:]))
		if no >= uint64(len(funcnames)) {
			return nil, false
		}
		name := funcnames[no:]
		end := bytes.IndexByte(name, 0)
		if end < 0 {
			return nil, false
		}
		if want[string(name[:end])] {
			if _, dup := entries[string(name[:end])]; !dup { // the first, as debug/gosym's LookupFunc
				entries[string(name[:end])] = text + uint64(binary.LittleEndian.Uint32(fn))
			}
		}
	}
	return entries, true
}
