package keyspace

import (
	"errors"
	"fmt"
	"log/slog"
	"math/bits"
	"path/filepath"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"github.com/cespare/xxhash/v2"

	"github.com/lavikdb/lavik/pkg/vfs"
	"github.com/lavikdb/lavik/services/data/vlog"
)

// Value types stored in the index and in records.
const (
	TypeString uint8 = 0
	// TypeHash is a hash: today one record holding every field (package commands encodes
	// it); the grouped layout for large hashes builds on the same type.
	TypeHash uint8 = 4
	// TypeSet is a set, one record like a hash.
	TypeSet uint8 = 2
	// TypeList is a list, one record like a hash.
	TypeList uint8 = 1
	// TypeZSet is a sorted set, one record like a hash.
	TypeZSet uint8 = 3
	// TypeStream is a stream with its consumer groups, one record like a hash.
	TypeStream uint8 = 6
)

// RawHint may be or-ed into a value type given to Put: the value was produced by an in-place
// edit and OBJECT ENCODING reports "raw". It is stored in the record's type byte too.
const RawHint uint8 = 0x10

// knownType reports whether this version knows value type t. A record of a type it does not
// know was written by a newer version, and the keyspace refuses to open rather than drop it.
func knownType(t uint8) bool {
	return t == TypeString || t == TypeHash || t == TypeSet || t == TypeList || t == TypeZSet || t == TypeStream
}

// TypeName is the name TYPE reports for a value type.
func TypeName(t uint8) string {
	switch t {
	case TypeString:
		return "string"
	case TypeHash:
		return "hash"
	case TypeSet:
		return "set"
	case TypeList:
		return "list"
	case TypeZSet:
		return "zset"
	case TypeStream:
		return "stream"
	}
	return "none"
}

// MaxDatabases is the number of database numbers a record can carry.
const MaxDatabases = 256

// InternalDB is the database of the node's own keys (a follower's replication state): never a
// client's (Options.Databases stays below it), not counted by Info, kept by replay and
// checkpoints whatever the databases setting. FLUSHALL empties it too.
const InternalDB = MaxDatabases - 1

// inReach reports whether keys of db are in the index: a client's database or InternalDB.
func (s *shard) inReach(db uint8) bool { return int(db) < s.dbs || db == InternalDB }

// Errors.
var (
	// ErrCorrupt wraps vlog.ErrCorrupt: a record failed verification and was not served.
	ErrCorrupt = vlog.ErrCorrupt
	// ErrClosed is returned after Close.
	ErrClosed = errors.New("keyspace: closed")
)

// Options configure a Keyspace.
type Options struct {
	FS  vfs.FS
	Dir string
	// Shards is the number of shards, a power of two. Too few: writers of different keys
	// contend on one lock; too many: more files, more fsyncs per group commit, smaller batches.
	// A few per core is right.
	Shards      int
	SegmentSize int64
	Engine      vlog.Engine
	Cache       *vlog.Cache // hot-value cache shared by every shard's log; nil = off
	Fsync       vlog.Fsync
	Databases   int
	Logger      *slog.Logger
	// Now returns the current time in unix milliseconds; tests inject a clock.
	Now func() int64
	// ReclaimRate is the bytes per second the background collector may read and write to
	// give dead records' space back (reclaim.go), more when disk use nears twice the live
	// data; 0 turns it off (SetReclaimRate changes it). Too low: under sustained overwrites
	// the collector works at the edge of that bound, competing with writes; too high:
	// reclamation takes I/O that reads need.
	ReclaimRate int64
	// CheckpointInterval: a shard checkpoints its index once its log has grown by this many
	// bytes, and by the size of its last checkpoint, since that checkpoint (checkpoint.go).
	// 0 means DefaultCheckpointInterval; negative turns checkpoints off, so that every start
	// replays the whole log. Too low: the index is rewritten often; too high: a start after a
	// crash replays more of the log.
	CheckpointInterval int64
	// ckptChunk and ckptHook let tests take checkpoints in small chunks and run operations
	// between them.
	ckptChunk int
	ckptHook  func(shard int)
	// chunkMin and chunkSize let tests store large values in many small chunks: values longer
	// than chunkMin bytes (0: ChunkThreshold) are stored in chunks of chunkSize bytes (0:
	// ChunkSize). A keyspace must be opened with the chunk size its data was written with.
	chunkMin, chunkSize int
	// GroupThreshold is the encoded length above which a value not a string (a hash, set, list,
	// sorted set or stream) is stored grouped (grouped.go); 0 means GroupMin.
	GroupThreshold int
	// afterScan, when set (by tests), is called after a collection has read its segment and
	// before it moves chunked values.
	afterScan func()
	// onTx, when set (by tests), is called with the id of every transaction of several
	// records, as it commits (txcond.go).
	onTx func(id uint64)
	// RepairCorruption makes Open move damaged bytes of the value log aside into each shard's
	// quarantine directory and go on with the valid records after them, instead of refusing
	// to start (see vlog's recovery).
	RepairCorruption bool
	// Follower opens the keyspace as a follower's (SetFollower(true)): a node that starts to
	// follow a primary, or that waits for lavik-meta to say what it is. Nothing is removed for
	// having expired, at Open either: the primary's stream from the follower's offset may still
	// change a key that expired by this clock (a PERSIST, a push that its primary made before
	// the key expired there), and only the primary's DEL removes it.
	Follower bool
}

// Keyspace is the whole keyspace of a lavik-data process.
type Keyspace struct {
	opts      Options
	shards    []*shard
	shardBits int
	log       *slog.Logger
	latency   atomic.Pointer[LatencySink] // latency.go

	stop chan struct{}
	wg   sync.WaitGroup
	// retry wakes the sync loop to retry a log's failed write (WriteErr).
	retry chan struct{}

	stats struct {
		hits, misses, expired, corrupt atomic.Uint64
		// moved counts reads of chunked values that looked again because a collection moved
		// the chunks they were reading (chunked.go).
		moved atomic.Uint64
	}
	rc reclaimer // reclamation (reclaim.go)
	// access tunes the LFU counters (access.go); ev is eviction's state (evict.go).
	access accessTuning
	ev     evictor
	// dirs caches decoded directories of grouped values: patch directories' bases and keys'
	// current directories, resolved (dirpatch.go).
	dirs dirCache
	ckpt ksCheckpoint // checkpoint counters (checkpoint.go)
	tx   txState      // transactions in the log (txcond.go)
	dbm  dbMapState   // logical to physical databases (dbmap.go)
	// fsync is the appendfsync policy (a vlog.Fsync); CONFIG SET may change it at run time.
	fsync    atomic.Int32
	loadTime time.Duration
	// sink receives the committed changes (changes.go); follower says only the change stream
	// removes expired keys.
	sink atomic.Pointer[ChangeSink]
	// expireHook is told of every expired key removed (SetExpireHook).
	expireHook atomic.Pointer[func(db int, key []byte)]
	// evictHook is told of every key evicted (SetEvictHook).
	evictHook atomic.Pointer[func(db int, key []byte)]
	follower  atomic.Bool
	floor     atomic.Int64 // SetClockFloor
	// engines are the other engines that read for the keyspace (RegisterEngine).
	enginesMu sync.Mutex
	engines   []vlog.Engine
}

type shard struct {
	id  int
	mu  sync.RWMutex
	ix  *index
	log *vlog.Log
	// version is the last version handed out in this shard. Invariant: every record's
	// version <= version.
	version uint64
	// nshards is the keyspace's shard count, which the length of a transaction's condition
	// may depend on (txExtLen).
	nshards int
	// replayVer, during Open only, holds the version of the record that defines each entry
	// (by entry index), so that replay can skip older records of the key; freed after Open.
	replayVer versionTable
	// dbs is the number of databases clients use; keys of others but InternalDB, left by a
	// larger databases setting, are out of reach (inReach).
	dbs      int
	keys     []int64 // live entries per database (expired but not yet removed included)
	expires  []int64 // entries with an expire-at per database
	expPos   uint32  // active expiry cursor (entry index)
	avgTTLMs atomic.Int64
	ckpt     shardCheckpoint // checkpoint state (checkpoint.go)
	// cs is the chunk size of chunked values (chunked.go).
	cs int
	// deadMans are the manifests of chunked values removed or overwritten whose chunks are not
	// yet marked dead; flushGen counts the times everything was marked dead at once (FLUSHALL, a
	// FLUSHDB that empties the shard), which empties the queue. See chunked.go.
	deadMans []deadManifest
	flushGen uint64
	// objs maps the object ids of the chunked values whose manifests this shard holds to their
	// keys, for the collector (chunked.go).
	objs map[uint64][]objKey
	// recent is, per slot of key hashes, the LSN of the newest record that changed a key of the
	// slot (durable.go). Written under the write lock, read under the read lock.
	recent [recentSlots]uint64
	// loaded says Open loaded a checkpoint into the index (during Open only).
	loaded bool
	// watched are the keys of this shard connections WATCH, by index hash (watch.go).
	watched map[uint32][]*watchReg
}

// Open opens the keyspace in opts.Dir, rebuilding the index from the value log.
func Open(opts Options) (*Keyspace, error) {
	if opts.Shards <= 0 || opts.Shards&(opts.Shards-1) != 0 || opts.Shards > 1024 {
		return nil, fmt.Errorf("keyspace: shards must be a power of two from 1 to 1024, not %d", opts.Shards)
	}
	if opts.Databases <= 0 || opts.Databases >= InternalDB {
		return nil, fmt.Errorf("keyspace: databases must be 1..%d, not %d", InternalDB, opts.Databases)
	}
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	if opts.Now == nil {
		opts.Now = func() int64 { return time.Now().UnixMilli() }
	}
	if opts.CheckpointInterval == 0 {
		opts.CheckpointInterval = DefaultCheckpointInterval
	}
	if opts.GroupThreshold <= 0 {
		opts.GroupThreshold = GroupMin
	}
	if opts.chunkMin <= 0 {
		opts.chunkMin = ChunkThreshold
	}
	if opts.chunkSize <= 0 {
		opts.chunkSize = ChunkSize
	}
	if err := checkFormat(opts.FS, opts.Dir, opts.Shards, opts.Logger); err != nil {
		return nil, err
	}
	ks := &Keyspace{opts: opts, log: opts.Logger, stop: make(chan struct{}), retry: make(chan struct{}, 1)}
	ks.follower.Store(opts.Follower)
	ks.SetLFU(10, 1) // Redis's defaults
	if err := ks.tx.loadAborted(opts.FS, opts.Dir); err != nil {
		return nil, err
	}
	ks.fsync.Store(int32(opts.Fsync))
	defer ks.SetFsync(opts.Fsync) // the logs' barriers follow the policy
	ks.shardBits = bits.TrailingZeros(uint(opts.Shards))
	start := time.Now()
	ks.shards = make([]*shard, opts.Shards)
	// Open every shard's log (settling torn tails) and load its checkpoint, then replay them
	// all: replay decides a transaction by where every shard's log ends (txcond.go).
	err := ks.eachShard(func(i int) (err error) {
		ks.shards[i], err = ks.openShard(i)
		return err
	})
	if err == nil {
		err = ks.cutIncompleteTx() // txcond.go
	}
	if err == nil {
		ks.tx.exts = make([]vlog.Extent, len(ks.shards))
		for i, s := range ks.shards {
			ks.tx.exts[i] = s.log.Extent()
		}
		err = ks.eachShard(func(i int) error { return ks.replayShard(ks.shards[i]) })
		ks.tx.exts = nil
	}
	if err == nil {
		err = ks.loadDBMap()
	}
	if err != nil {
		for _, s := range ks.shards {
			if s != nil {
				s.log.Close()
				s.ix.release()
			}
		}
		return nil, err
	}
	if invariants {
		for _, s := range ks.shards {
			s.mu.Lock()
			ks.checkShardLocked(s)
			s.mu.Unlock()
		}
	}
	ks.wg.Add(2)
	go ks.expireLoop()
	go ks.syncLoop()
	ks.startReclaim() // reads the manifests of chunked values: part of the load
	ks.loadTime = time.Since(start)
	ks.wg.Add(1)
	go ks.checkpointLoop()
	ks.ev.wake = make(chan struct{}, 1)
	ks.RefreshUse()
	ks.wg.Add(1)
	go ks.evictLoop()
	return ks, nil
}

// eachShard runs fn for every shard, a few at a time, and joins their errors.
func (ks *Keyspace) eachShard(fn func(i int) error) error {
	errs := make([]error, len(ks.shards))
	sem := make(chan struct{}, 4)
	var wg sync.WaitGroup
	for i := range ks.shards {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			errs[i] = fn(i)
		}()
	}
	wg.Wait()
	return errors.Join(errs...)
}

// openShard opens shard id's log and loads its checkpoint; replayShard replays the log.
func (ks *Keyspace) openShard(id int) (*shard, error) {
	ix, err := newIndex()
	if err != nil {
		return nil, fmt.Errorf("keyspace: shard %d: %w", id, err)
	}
	ix.now, ix.lfuOn = ks.opts.Now, &ks.access.lfu
	s := &shard{
		id:      id,
		ix:      ix,
		nshards: len(ks.shards),
		dbs:     ks.opts.Databases,
		keys:    make([]int64, MaxDatabases),
		expires: make([]int64, MaxDatabases),
		cs:      ks.opts.chunkSize,
	}
	s.ckpt.dir = filepath.Join(ks.opts.Dir, shardDirName(id))
	s.log, err = vlog.Open(vlog.Options{
		FS:          ks.opts.FS,
		Dir:         s.ckpt.dir,
		SegmentSize: ks.opts.SegmentSize,
		Engine:      ks.opts.Engine,
		Cache:       ks.opts.Cache,
		Fsync:       ks.opts.Fsync,
		Logger:      ks.log.With("shard", id),
		Repair:      ks.opts.RepairCorruption,
		// A transaction's part is sealed only with the whole transaction (stableCut).
		SealWhenStable: true,
	})
	if err != nil {
		s.ix.release()
		return nil, fmt.Errorf("keyspace: shard %d: %w", id, err)
	}
	if s.loaded, err = ks.loadCheckpoint(s); err != nil {
		s.log.Close()
		s.ix.release()
		return nil, fmt.Errorf("keyspace: shard %d: %w", id, err)
	}
	return s, nil
}

// valueRef is where a key's value record is and what the index keeps about it.
type valueRef struct {
	vtype    uint8
	tx       uint8 // the record's transaction code (txCode)
	expireAt int64
	seg, off uint32
	vlen     uint32
}

// pointLocked makes (db, key) point at the value record v: entry i when found, else a newly
// inserted entry (hash is the key's index hash). Per-database counts follow the change. It is
// the one place writes, replay and checkpoint loading set an entry.
func (s *shard) pointLocked(i uint32, found bool, hash uint32, db uint8, key []byte, v valueRef) (uint32, *entry, error) {
	var e *entry
	if found {
		e = s.ix.entry(i)
		s.countLocked(e, -1)
	} else {
		var err error
		if i, e, err = s.ix.insert(hash, db, key); err != nil {
			return 0, nil, err
		}
	}
	e.setMeta(db, v.vtype, v.tx)
	e.expireAt, e.seg, e.off, e.vlen = v.expireAt, v.seg, v.off, v.vlen
	s.countLocked(e, 1)
	return i, e, nil
}

func (s *shard) countLocked(e *entry, d int64) {
	s.keys[e.db()] += d
	if e.expireAt != 0 {
		s.expires[e.db()] += d
	}
}

func (s *shard) removeLocked(i uint32, pos uint32) {
	s.touchRemovedLocked(s.ix.entry(i))
	s.markRemovedLocked(s.ix.entry(i))
	s.countLocked(s.ix.entry(i), -1)
	s.ix.remove(i, pos)
}

func (s *shard) clearLocked() {
	s.touchAllLocked()
	s.ix.clear()
	clear(s.keys)
	clear(s.expires)
	s.expPos = 0
	// Whatever removed every key accounted for every chunk too (chunked.go).
	s.deadMans = nil
	s.flushGen++
	clear(s.objs)
}

func (s *shard) flushDBLocked(db uint8) {
	if s.keys[db] == 0 {
		return
	}
	if s.keys[db] == int64(s.ix.count) {
		s.markAllDeadLocked()
		s.clearLocked()
		return
	}
	for i := uint32(0); i < s.ix.high; i++ {
		if e := s.ix.entry(i); e.live() && e.db() == db {
			s.removeLocked(i, s.ix.slotOf(i))
		}
	}
}

// hashKey mixes the database into the key's hash: the top bits pick the shard, the low 32 bits
// are the index hash.
func hashKey(db uint8, key []byte) uint64 {
	h := xxhash.Sum64(key) + uint64(db)*0x9E3779B97F4A7C15
	h ^= h >> 33
	h *= 0xff51afd7ed558ccd
	h ^= h >> 33
	return h
}

func (ks *Keyspace) hash(db uint8, key []byte) uint64 { return hashKey(db, key) }

func (ks *Keyspace) shardOf(h uint64) *shard {
	if ks.shardBits == 0 {
		return ks.shards[0]
	}
	return ks.shards[h>>(64-ks.shardBits)]
}

// SetFsync changes the appendfsync policy; it applies to the next durability wait. Under
// "always" a transaction's part in one log is followed by nothing written before its other parts
// are synced; otherwise, before they are written (vlog.Log.AddBarrier).
func (ks *Keyspace) SetFsync(f vlog.Fsync) {
	ks.fsync.Store(int32(f))
	for _, s := range ks.shards {
		if s != nil {
			s.log.SetPeerSync(f == vlog.FsyncAlways)
		}
	}
}

// Fsync returns the appendfsync policy in force.
func (ks *Keyspace) Fsync() vlog.Fsync { return vlog.Fsync(ks.fsync.Load()) }

// ResetStats clears the counters CONFIG RESETSTAT resets.
func (ks *Keyspace) ResetStats() {
	ks.stats.hits.Store(0)
	ks.stats.misses.Store(0)
	ks.stats.expired.Store(0)
}

// EngineName is the name of the engine the value log reads with.
func (ks *Keyspace) EngineName() string { return ks.opts.Engine.Name() }

// Now returns the keyspace clock in unix milliseconds.
func (ks *Keyspace) Now() int64 { return ks.opts.Now() }

// Databases is the number of databases.
func (ks *Keyspace) Databases() int { return ks.opts.Databases }

// LoadTime is how long Open took to rebuild the index.
func (ks *Keyspace) LoadTime() time.Duration { return ks.loadTime }

// Close stops background work, syncs and closes every shard's log and frees the index.
// Afterwards the keyspace is empty: lookups find nothing and writes fail.
func (ks *Keyspace) Close() error {
	select {
	case <-ks.stop:
		return ErrClosed
	default:
	}
	close(ks.stop)
	ks.wg.Wait()
	// Each log ends with a proof of its durability before the checkpoints note where the
	// logs end, so that a clean restart replays nothing: the logs are synced and stable where
	// they end, so the proof covers the seal of every full segment too.
	ks.syncAll()
	for _, s := range ks.shards {
		if err := ks.syncAndMark(s); err != nil && !errors.Is(err, vlog.ErrClosed) {
			ks.log.Error("final sync failed", "shard", s.id, "err", err)
		}
	}
	ks.checkpointAtClose()
	var errs []error
	for _, s := range ks.shards {
		s.mu.Lock()
		if invariants {
			ks.checkShardLocked(s)
		}
		errs = append(errs, s.log.Close())
		// The index lives outside the Go heap, so nothing would free it but this.
		s.ix.release()
		clear(s.keys)
		clear(s.expires)
		s.mu.Unlock()
	}
	return errors.Join(errs...)
}

// syncLoop fdatasyncs every shard once a second under "everysec" (and writes the tail to the OS
// under "no", syncing only when the tail limit forces it).
//
// After a good sync it lets the log append a mark if its records do not yet prove what is
// durable (vlog.Log.Mark), so that a quiet shard is proven too. While a shard's log has a write
// error the loop retries it, every second and whenever WriteErr is asked (retry).
//
// Each round also advances the logs' stable LSNs (vlog.Log.SetStable) to a consistent cut taken
// before the syncs, once every log has synced past it (stableCut).
func (ks *Keyspace) syncLoop() {
	var cut []uint64
	ks.every(time.Second, ks.retry, func() bool {
		if cut == nil {
			cut = ks.cutLSNs()
		}
		start := ks.latencyStart()
		defer ks.latencyEnd("vlog-fsync", start)
		for _, s := range ks.shards {
			var err error
			switch {
			case s.log.WriteErr() != nil:
				err = s.log.Retry()
			case ks.Fsync() == vlog.FsyncNo:
				err = s.log.Flush(s.log.AppendedLSN(), false)
			default:
				err = ks.syncAndMark(s)
			}
			if err != nil && !errors.Is(err, vlog.ErrClosed) {
				ks.log.Error("background sync failed", "shard", s.id, "err", err)
			}
		}
		if ks.publishStable(cut) {
			cut = nil
		}
		return true
	})
}

// Stable cuts. A transaction's parts are appended to their logs under all their shards' locks,
// so the logs' appended LSNs read under every shard's lock are a consistent cut: every
// transaction lies wholly before it or wholly after it in each log. Once every log has synced
// past its LSN of the cut, no transaction below the cut can be found incomplete by a recovery,
// and the logs may seal the segments below it (vlog.Log.SetStable): recovery then need not look
// for incomplete transactions there. Under appendfsync always the barriers alone would do;
// under everysec and no, a transaction's part can be synced in one log while another part is
// only written to the OS in its own, and sealing on a sync alone would hide the first part from
// the recovery that must drop it with everything after it. The cut costs one pass over the
// shard locks a second, and keeps full segments open (their files, not their bytes) about a
// second longer.

// cutLSNs returns every log's appended LSN at one instant, under every shard's lock.
func (ks *Keyspace) cutLSNs() []uint64 {
	unlock := ks.lockAll()
	defer unlock()
	cut := make([]uint64, len(ks.shards))
	for i, s := range ks.shards {
		cut[i] = s.log.AppendedLSN()
	}
	return cut
}

// publishStable makes cut the logs' stable LSNs if every log has synced past its LSN of it,
// and reports whether it did.
func (ks *Keyspace) publishStable(cut []uint64) bool {
	for i, s := range ks.shards {
		if s.log.DurableLSN(true) < cut[i] {
			return false
		}
	}
	for i, s := range ks.shards {
		s.log.SetStable(cut[i])
	}
	return true
}

// syncAll syncs every shard's log up to where it ends now, and makes that a stable cut.
func (ks *Keyspace) syncAll() error {
	cut := ks.cutLSNs()
	for _, s := range ks.shards {
		if err := s.log.Sync(); err != nil {
			return err
		}
	}
	ks.publishStable(cut)
	return nil
}

// syncAndMark syncs s's log and then lets it append a mark where its records do not yet prove
// what is durable (vlog.Log.Mark); the next sync makes the mark durable too.
func (ks *Keyspace) syncAndMark(s *shard) error {
	if err := s.log.Sync(); err != nil {
		return err
	}
	s.mu.Lock() // appends hold the shard's lock (vlog.Log.Reserve)
	defer s.mu.Unlock()
	_, marked, err := s.log.Mark()
	if err == nil && marked && ks.stopping() {
		err = s.log.Sync() // closing: no later tick will
	}
	return err
}

// every runs fn on each tick of d, and whenever wake fires, until Close or until fn returns
// false. It is the skeleton of the background loops (sync, expiry, reclamation, checkpoints)
// and calls ks.wg.Done when it returns.
func (ks *Keyspace) every(d time.Duration, wake <-chan struct{}, fn func() bool) {
	defer ks.wg.Done()
	t := time.NewTicker(d)
	defer t.Stop()
	for {
		select {
		case <-ks.stop:
			return
		case <-t.C:
		case <-wake:
		}
		if !fn() {
			return
		}
	}
}

// WriteErr returns a write or sync error of any shard's log, or nil when all can write. The
// server refuses write commands while it is set.
// While one is set, asking starts a retry in the background, so that writes resume as soon as
// the disk takes them again, not up to a second later.
func (ks *Keyspace) WriteErr() error {
	for _, s := range ks.shards {
		if err := s.log.WriteErr(); err != nil {
			select {
			case ks.retry <- struct{}{}:
			default:
			}
			return err
		}
	}
	return nil
}

// Session tracks what one connection must wait for before it replies: the records it wrote,
// and those the keys it read depend on (durable.go).
type Session struct {
	ks      *Keyspace
	pending []uint64 // per shard: highest LSN to wait for and not yet waited for
	tx      []bool   // per shard: the wait covers transactions' other parts too
	dirty   []int
	notes   uint64
	// exec is the EXEC the session is running (exec.go), nil when none.
	exec *execBatch
	// effects are the current command's (or EXEC's) effect not yet logged, kept of them the
	// part earlier commands of an EXEC stated; clock, when not 0, is the clock its EXECs decide
	// by (changes.go).
	effects    []Effect
	kept       int
	clock      int64
	cmdClock   int64
	lastChange int64
	change     Change // changedLocked's, reused
	// track, set by TrackKeys, makes the session list in keys the keys its commits create or
	// remove, for the keyspace events "new" and "del" (notify.go).
	track bool
	keys  []keyChange
	// announced says the effects hold an Announce of the running EXEC, which reaches the sink
	// even if the EXEC writes nothing.
	announced bool
	// noTouch leaves the keys' access information alone (CLIENT NO-TOUCH, access.go).
	noTouch bool
}

// NewSession returns a session for one connection.
func (ks *Keyspace) NewSession() *Session {
	return &Session{ks: ks, pending: make([]uint64, len(ks.shards)), tx: make([]bool, len(ks.shards))}
}

func (se *Session) note(shard int, lsn uint64) { se.noteTx(shard, lsn, false) }

// noteTx adds lsn of shard to what the session waits for; tx says the wait must also cover the
// other parts of the transactions up to it.
func (se *Session) noteTx(shard int, lsn uint64, tx bool) {
	if se.pending[shard] == 0 {
		se.dirty = append(se.dirty, shard)
	}
	se.pending[shard] = max(se.pending[shard], lsn)
	se.tx[shard] = se.tx[shard] || tx
	se.notes++
}

// Notes counts what the session was given to wait for since it was made. A caller compares it
// before and after a command to know whether the command's reply depends on the next wait.
func (se *Session) Notes() uint64 { return se.notes }

// Dirty reports whether the session has writes not yet waited for.
func (se *Session) Dirty() bool { return len(se.dirty) > 0 }

// Syncs reports whether the session's next Wait may have to sync (appendfsync always, with
// something to wait for): a caller that must not block for a disk flush waits elsewhere.
func (se *Session) Syncs() bool { return se.Dirty() && se.ks.Fsync() == vlog.FsyncAlways }

// Wait makes the session's writes as durable as the appendfsync policy promises: written to the
// OS (everysec, no) or synced (always). It returns the first flush error.
func (se *Session) Wait() error {
	var first error
	sync := se.ks.Fsync() == vlog.FsyncAlways
	if sync && len(se.dirty) > 0 {
		defer se.ks.latencyEnd("vlog-fsync-always", se.ks.latencyStart())
	}
	for _, i := range se.dirty {
		l := se.ks.shards[i].log
		var err error
		if se.tx[i] {
			err = l.FlushTx(se.pending[i], sync)
		} else {
			err = l.Flush(se.pending[i], sync)
		}
		if err != nil && first == nil {
			first = err
		}
		se.pending[i], se.tx[i] = 0, false
	}
	se.dirty = se.dirty[:0]
	return first
}

// sortShards sorts and de-duplicates shard pointers by id (the lock order).
func sortShards(ss []*shard) []*shard {
	sort.Slice(ss, func(a, b int) bool { return ss[a].id < ss[b].id })
	out := ss[:0]
	for i, s := range ss {
		if i == 0 || s != ss[i-1] {
			out = append(out, s)
		}
	}
	return out
}

// FS returns the file system the keyspace keeps its files in, for the other small files of the
// data directory.
func (ks *Keyspace) FS() vfs.FS { return ks.opts.FS }
