package sqlite

import (
	"encoding/binary"
	"math"
	"time"

	"payd"
)

// rtpRing holds the records of the RTP cache (rtpcache.go): encoded one
// after another in a fixed arena, the oldest overwritten first, with an
// index by id. The arena holds no pointers and, on Unix, lies outside Go's
// heap (an anonymous mapping, arena_unix.go): the collector neither scans
// it nor counts it when it sizes the heap (GOGC=400 lets the heap grow to
// five times what is live, so a cache of Go values would have cost several
// times its size in RSS). rtpArenaBytes hold 90,000 to 100,000 RTPs of
// the usual size (240 to 270 bytes each).
//
// A record is, in little-endian order:
//
//	seq uint64 | size uint32 | 16-byte key | amount, autoAt, createdAt,
//	updatedAt, expiresAt int64 | 13 string lengths uint16 | the strings
//
// padded to 16 bytes (so that an end marker always fits). A seq of 0 marks
// the arena's unused end before the ring wraps. A slot of the index names
// a record by offset and seq, so a record overwritten since is told by its
// seq.
type rtpRing struct {
	size       int // the arena's, a multiple of 16 (0: rtpArenaBytes)
	arena      []byte
	index      map[[16]byte]ringSlot
	head, tail int    // the next record's offset; the oldest record's
	count      int    // records (and end markers) in the arena
	seq        uint64 // the last record's number
}

type ringSlot struct {
	off int
	seq uint64
}

const (
	rtpArenaBytes = 24 << 20
	rtpRecordMax  = 4 << 10 // a larger record is not kept
	ringHeader    = 8 + 4 + 16 + 5*8 + rtpStrings*2
	rtpStrings    = 13
)

// noTime encodes a zero time.Time (an RTP without a pending decision).
const noTime = math.MinInt64

// rtpKey is the 16 bytes of a canonical (lower-case) UUID; other ids are
// not kept (payd's RTP ids are all canonical).
func rtpKey(id string) (k [16]byte, ok bool) {
	if len(id) != 36 {
		return k, false
	}
	j := 0
	for i := 0; i < 36; {
		if i == 8 || i == 13 || i == 18 || i == 23 {
			if id[i] != '-' {
				return k, false
			}
			i++
			continue
		}
		hi, ok1 := lowerHex(id[i])
		lo, ok2 := lowerHex(id[i+1])
		if !ok1 || !ok2 {
			return k, false
		}
		k[j] = hi<<4 | lo
		j++
		i += 2
	}
	return k, true
}

func lowerHex(c byte) (byte, bool) {
	switch {
	case c >= '0' && c <= '9':
		return c - '0', true
	case c >= 'a' && c <= 'f':
		return c - 'a' + 10, true
	}
	return 0, false
}

func rtpStringsOf(r *payd.RTP) [rtpStrings]string {
	return [rtpStrings]string{r.ID, r.MerchantID, r.Alias, r.Currency, r.Description, r.OrderID, r.TerminalID,
		r.CallbackURL, r.RedirectURL, string(r.Status), r.CancelReason, r.PayID, r.AutoAction}
}

func encodeTime(t time.Time) int64 {
	if t.IsZero() {
		return noTime
	}
	return t.UnixMilli()
}

func decodeTime(ms int64) time.Time {
	if ms == noTime {
		return time.Time{}
	}
	return payd.UnixMilli(ms)
}

// put keeps r, overwriting the oldest records as needed; a record too
// large or an id not canonical is not kept.
func (g *rtpRing) put(r *payd.RTP) {
	key, ok := rtpKey(r.ID)
	if !ok {
		return
	}
	strs := rtpStringsOf(r)
	size := ringHeader
	for _, s := range strs {
		size += len(s)
	}
	size = (size + 15) &^ 15
	if size > rtpRecordMax {
		return
	}
	if g.arena == nil {
		if g.size == 0 {
			g.size = rtpArenaBytes
		}
		g.arena = newArena(g.size)
		g.index = map[[16]byte]ringSlot{}
	}
	off := g.reserve(size)
	g.seq++
	b := g.arena[off : off+size]
	le := binary.LittleEndian
	le.PutUint64(b[0:], g.seq)
	le.PutUint32(b[8:], uint32(size))
	copy(b[12:28], key[:])
	for i, v := range [5]int64{int64(r.Amount), encodeTime(r.AutoAt), encodeTime(r.CreatedAt), encodeTime(r.UpdatedAt), encodeTime(r.ExpiresAt)} {
		le.PutUint64(b[28+8*i:], uint64(v))
	}
	at := ringHeader
	for i, s := range strs {
		le.PutUint16(b[68+2*i:], uint16(len(s)))
		at += copy(b[at:], s)
	}
	g.index[key] = ringSlot{off: off, seq: g.seq}
}

// reserve frees size bytes at the head, oldest records first, and returns
// their offset.
func (g *rtpRing) reserve(size int) int {
	for {
		if g.count == 0 {
			g.head, g.tail = 0, 0
		}
		if g.head == len(g.arena) { // the last record ended the arena
			g.head = 0
		}
		if g.count == 0 || g.head != g.tail { // else full
			switch {
			case g.head >= g.tail && g.head+size <= len(g.arena), g.head < g.tail && g.head+size <= g.tail:
				g.head += size
				g.count++
				return g.head - size
			case g.head >= g.tail && g.tail > 0: // mark the end unused and wrap
				binary.LittleEndian.PutUint64(g.arena[g.head:], 0)
				binary.LittleEndian.PutUint32(g.arena[g.head+8:], uint32(len(g.arena)-g.head))
				g.count++
				g.head = 0
				continue
			}
		}
		g.evictOldest()
	}
}

// evictOldest drops the record (or end marker) at the tail.
func (g *rtpRing) evictOldest() {
	b := g.arena[g.tail:]
	seq, size := binary.LittleEndian.Uint64(b), int(binary.LittleEndian.Uint32(b[8:]))
	if seq != 0 {
		var key [16]byte
		copy(key[:], b[12:28])
		if s, ok := g.index[key]; ok && s.seq == seq {
			delete(g.index, key)
		}
	}
	g.count--
	if g.tail += size; g.tail == len(g.arena) {
		g.tail = 0
	}
}

// get decodes the record of id.
func (g *rtpRing) get(id string) (*payd.RTP, bool) {
	key, ok := rtpKey(id)
	if !ok {
		return nil, false
	}
	s, ok := g.index[key]
	if !ok {
		return nil, false
	}
	le := binary.LittleEndian
	b := g.arena[s.off:]
	if le.Uint64(b) != s.seq {
		// Overwritten: eviction drops the slot first, so this guards the
		// ring's bookkeeping, not a case it makes.
		delete(g.index, key)
		return nil, false
	}
	b = b[:le.Uint32(b[8:])]
	var n [5]int64
	for i := range n {
		n[i] = int64(le.Uint64(b[28+8*i:]))
	}
	var lens [rtpStrings]int
	total := 0
	for i := range lens {
		lens[i] = int(le.Uint16(b[68+2*i:]))
		total += lens[i]
	}
	all := string(b[ringHeader : ringHeader+total]) // one allocation for every string
	var strs [rtpStrings]string
	at := 0
	for i, l := range lens {
		strs[i] = all[at : at+l]
		at += l
	}
	return &payd.RTP{ID: strs[0], MerchantID: strs[1], Alias: strs[2], Currency: strs[3], Description: strs[4],
		OrderID: strs[5], TerminalID: strs[6], CallbackURL: strs[7], RedirectURL: strs[8], Status: payd.RTPStatus(strs[9]),
		CancelReason: strs[10], PayID: strs[11], AutoAction: strs[12], Amount: payd.Money(n[0]), AutoAt: decodeTime(n[1]),
		CreatedAt: decodeTime(n[2]), UpdatedAt: decodeTime(n[3]), ExpiresAt: decodeTime(n[4])}, true
}

// drop forgets the record of id.
func (g *rtpRing) drop(id string) {
	if key, ok := rtpKey(id); ok && g.index != nil {
		delete(g.index, key)
	}
}

// clear forgets every record; the arena's bytes are overwritten in turn.
func (g *rtpRing) clear() {
	if g.index != nil {
		clear(g.index)
	}
}

// free returns the arena; the ring keeps nothing afterwards.
func (g *rtpRing) free() {
	if g.arena != nil {
		freeArena(g.arena)
	}
	g.arena, g.index, g.head, g.tail, g.count = nil, nil, 0, 0, 0
}

// len is how many records the ring holds.
func (g *rtpRing) len() int { return len(g.index) }
