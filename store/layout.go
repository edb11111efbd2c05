package store

import (
	"encoding/binary"
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/harnessd/harnessd/core/event"
)

// The file's layout. Every bucket is top-level and flat.
//
//	meta      "format" -> uvarint format version
//	          "indexed" -> 8-byte gid: every log record <= it is in idx
//	sessions  session id -> Session as JSON
//	trash     session id -> nil: deleted, its data still being swept
//	log       gid (8-byte big-endian) -> record: uvarint len(session),
//	          session, uvarint seq, the event's exact JSON
//	idx       session 0x00 firstSeq (8-byte BE) -> block: the gids of
//	          seqs firstSeq, firstSeq+1, … as runs (uvarint gap, uvarint len)
//	outmeta   output number (8-byte BE) -> session id
//	outchunk  output number, chunk number (4-byte BE) -> uvarint newline
//	          count, then up to ChunkSize bytes of the output
//	sessout   session 0x00 output number -> nil
//	runs      session 0x00 run id -> an agent run's record (runs.go)
//	runids    run id -> session
//
// Why: bbolt's cost is the commit, and a commit that dirties many pages is
// slower. The log is keyed by a global sequence (gid), so each commit's
// events go to the rightmost leaves, whatever the number of sessions, and
// with FillPercent 1.0 those leaves are split full, not half full. A
// session's index entries would, by contrast, dirty one leaf per session
// per commit. Measured here, 64 sessions, 300-byte events, one group-commit
// writer: the log alone 48k events/s; the log plus a per-event index
// session|seq -> gid 16k; session|seq -> event 15k; a bucket per session
// 14k. So the index is written lazily: a session's newest gids stay in
// memory until there are indexBlock of them (or they are older than
// indexWindow gids), and are then written as one block, which costs a
// commit less than a page on average. At Open, the log after the "indexed"
// watermark is scanned to rebuild those in-memory tails; the window bounds
// that scan (indexWindow records, under a millisecond).
var (
	bucketMeta     = []byte("meta")
	bucketSessions = []byte("sessions")
	bucketTrash    = []byte("trash")
	bucketLog      = []byte("log")
	bucketIdx      = []byte("idx")
	bucketOutMeta  = []byte("outmeta")
	bucketOutChunk = []byte("outchunk")
	bucketSessOut  = []byte("sessout")
	bucketRuns     = []byte("runs")   // see runs.go
	bucketRunIDs   = []byte("runids") // see runs.go

	allBuckets = [][]byte{bucketMeta, bucketSessions, bucketTrash, bucketLog, bucketIdx, bucketOutMeta, bucketOutChunk, bucketSessOut, bucketRuns, bucketRunIDs}

	keyFormat  = []byte("format")
	keyIndexed = []byte("indexed")
)

// formatVersion is the layout version this build writes and reads.
const formatVersion = 1

// Tuning of the lazy index; variables so tests can make them small.
var (
	indexBlock  = 128   // a session's pending gids written as a block at this many
	indexWindow = 16384 // no pending gid is older than this many gids
	sweepBudget = 8192  // keys the sweep of deleted sessions removes per commit
)

// MaxSessionID is the longest session id the store accepts, in bytes.
const MaxSessionID = 128

// checkSessionID rejects ids that could not be keys of the layout (NUL
// separates the id in idx keys) or that would be awkward in a URL path.
func checkSessionID(id string) error {
	if id == "" || len(id) > MaxSessionID || !utf8.ValidString(id) {
		return fmt.Errorf("%w: id %q must be 1-%d bytes of UTF-8", ErrInvalidSession, id, MaxSessionID)
	}
	if strings.ContainsFunc(id, func(r rune) bool { return r < 0x20 || r == 0x7f || r == '/' }) {
		return fmt.Errorf("%w: id %q has a control character or '/'", ErrInvalidSession, id)
	}
	return nil
}

func bytesToU64(b []byte) uint64     { return binary.BigEndian.Uint64(b) }
func bytesToU32(b []byte) uint32     { return binary.BigEndian.Uint32(b) }
func uvarint(b []byte) (uint64, int) { return binary.Uvarint(b) }

// decodeEvent decodes one stored event.
func decodeEvent(data []byte) (event.Event, error) { return event.Decode(data) }

func u64key(n uint64) []byte {
	var k [8]byte
	binary.BigEndian.PutUint64(k[:], n)
	return k[:]
}

// sessionPrefix is the prefix of a session's keys in idx and sessout.
func sessionPrefix(session string) []byte {
	p := make([]byte, 0, len(session)+9)
	p = append(p, session...)
	return append(p, 0)
}

func idxKey(session string, firstSeq uint64) []byte {
	return binary.BigEndian.AppendUint64(sessionPrefix(session), firstSeq)
}

func chunkKey(out uint64, chunk uint32) []byte {
	k := make([]byte, 12)
	binary.BigEndian.PutUint64(k, out)
	binary.BigEndian.PutUint32(k[8:], chunk)
	return k
}

func sessOutKey(session string, out uint64) []byte {
	return binary.BigEndian.AppendUint64(sessionPrefix(session), out)
}

// appendRecord appends a log record's header; the event's JSON follows it.
func appendRecordHeader(b []byte, session string, seq uint64) []byte {
	b = binary.AppendUvarint(b, uint64(len(session)))
	b = append(b, session...)
	return binary.AppendUvarint(b, seq)
}

// parseRecord splits a log record into its header fields and event JSON.
func parseRecord(rec []byte) (session []byte, seq uint64, data []byte, err error) {
	n, w := binary.Uvarint(rec)
	if w <= 0 || n > uint64(len(rec)-w) {
		return nil, 0, nil, fmt.Errorf("%w: log record header", ErrCorrupt)
	}
	session = rec[w : w+int(n)]
	rest := rec[w+int(n):]
	seq, w = binary.Uvarint(rest)
	if w <= 0 {
		return nil, 0, nil, fmt.Errorf("%w: log record seq", ErrCorrupt)
	}
	return session, seq, rest[w:], nil
}

// appendBlock encodes gids (in seq order) as runs of consecutive gids.
func appendBlock(b []byte, gids []uint64) []byte {
	var prevEnd uint64
	for i := 0; i < len(gids); {
		j := i + 1
		for j < len(gids) && gids[j] == gids[j-1]+1 {
			j++
		}
		b = binary.AppendUvarint(b, gids[i]-prevEnd)
		b = binary.AppendUvarint(b, uint64(j-i))
		prevEnd = gids[j-1]
		i = j
	}
	return b
}

// blockRuns calls fn for each run (first gid, length) of a block.
func blockRuns(block []byte, fn func(start, n uint64) error) error {
	var prevEnd uint64
	for len(block) > 0 {
		gap, w := binary.Uvarint(block)
		if w <= 0 {
			return fmt.Errorf("%w: index block", ErrCorrupt)
		}
		block = block[w:]
		n, w := binary.Uvarint(block)
		if w <= 0 || n == 0 {
			return fmt.Errorf("%w: index block", ErrCorrupt)
		}
		block = block[w:]
		start := prevEnd + gap
		if err := fn(start, n); err != nil {
			return err
		}
		prevEnd = start + n - 1
	}
	return nil
}

// blockLen is the number of gids in a block.
func blockLen(block []byte) (uint64, error) {
	var total uint64
	err := blockRuns(block, func(_, n uint64) error { total += n; return nil })
	return total, err
}
