package gobin

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

// funcOffsets finds the entries of the functions named in names in a
// little-endian Go 1.18+ .gopclntab, as offsets from the start of Go's
// code, runtime.text (goTextStart finds it; of a name given twice, as an
// ABI wrapper's is, the first in the table). It
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
func funcOffsets(tab []byte, names []string) (offsets map[string]uint64, ok bool) {
	h, ok := readPclnHeader(tab)
	if !ok {
		return nil, false
	}
	nfunc, nameOff, funcOff := h.nfunc, h.nameOff, h.funcOff
	funcnames, functab := tab[nameOff:], tab[funcOff:]
	want := make(map[string]bool, len(names))
	for _, n := range names {
		want[n] = true
	}
	offsets = make(map[string]uint64, len(names))
	for i := uint64(0); i < nfunc && len(offsets) < len(want); i++ {
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
			if _, dup := offsets[string(name[:end])]; !dup { // the first, as debug/gosym's LookupFunc
				offsets[string(name[:end])] = uint64(binary.LittleEndian.Uint32(fn))
			}
		}
	}
	return offsets, true
}

// pclnHeader is what funcOffsets and moduleText read of a pclntab's
// header.
type pclnHeader struct {
	nfunc, nameOff, funcOff uint64
}

// readPclnHeader reads the header of a little-endian Go 1.18+ pclntab
// with 8-byte pointers, checking that the function table and the names
// lie inside tab. ok is false for another format.
func readPclnHeader(tab []byte) (h pclnHeader, ok bool) {
	if len(tab) < 8+8*8 {
		return h, false
	}
	magic := binary.LittleEndian.Uint32(tab)
	if magic != pclntabMagic118 && magic != pclntabMagic120 || tab[4] != 0 || tab[5] != 0 || tab[7] != 8 {
		return h, false
	}
	word := func(i int) uint64 { return binary.LittleEndian.Uint64(tab[8+i*8:]) }
	h = pclnHeader{nfunc: word(0), nameOff: word(3), funcOff: word(7)}
	// The function table is nfunc+1 entries of 8 bytes.
	if h.nameOff >= uint64(len(tab)) || h.funcOff >= uint64(len(tab)) || h.nfunc+1 > (uint64(len(tab))-h.funcOff)/8 {
		return h, false
	}
	return h, true
}

// moduleText finds runtime.text in the module data the Go linker wrote
// for the runtime (runtime/symtab.go's moduledata), among data: the
// contents of the binary's writable segments, loaded at dataAddr. The
// pclntab tab, loaded at tabAddr, tells it apart: moduledata starts with
// the pclntab's address, then the slices of its function names (at
// nameOff) and, after five more slices, of its function table (at
// funcOff, nfunc+1 long); the function table's first entry, minpc, and
// text come four words after that. The layout is the same from Go 1.18
// to Go 1.26 at least; a binary whose data matches none of it has no
// text found (ok false).
func moduleText(data []byte, dataAddr uint64, tab []byte, tabAddr uint64) (text uint64, ok bool) {
	h, ok := readPclnHeader(tab)
	if !ok {
		return 0, false
	}
	var want [8]byte
	binary.LittleEndian.PutUint64(want[:], tabAddr)
	const words = 23
	for from := 0; from < len(data); {
		i := bytes.Index(data[from:], want[:])
		if i < 0 {
			return 0, false
		}
		at := from + i
		from = at + 1
		if (dataAddr+uint64(at))%8 != 0 || at+words*8 > len(data) {
			continue
		}
		w := func(i int) uint64 { return binary.LittleEndian.Uint64(data[at+i*8:]) }
		if w(0) != tabAddr || w(1) != tabAddr+h.nameOff || w(16) != tabAddr+h.funcOff || w(17) != h.nfunc+1 {
			continue
		}
		minpc, text := w(20), w(22)
		if minpc != text+uint64(binary.LittleEndian.Uint32(tab[h.funcOff:])) {
			continue
		}
		return text, true
	}
	return 0, false
}
