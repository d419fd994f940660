package main

import (
	"hash/maphash"
	"sync"
)

// maxIDLen is the longest episode id, in bytes.
const maxIDLen = 1024

// episodeRec is the C API's record of one running episode.
type episodeRec struct {
	id string // the id ExternalEnv returned: passed back, it is found by its address

	mu   sync.Mutex
	last []float32 // the last observation reported, for ending the episode at close
	seen bool      // an observation was reported
}

// note records obs as the episode's last observation.
func (r *episodeRec) note(obs []float32) {
	r.mu.Lock()
	r.last = append(r.last[:0], obs...)
	r.seen = true
	r.mu.Unlock()
}

// episodeTable maps the ids of running episodes, given as bytes from C, to their records
// without allocating: a map look-up with string(b) copies nothing.
type episodeTable struct {
	seed   maphash.Seed
	shards [64]episodeShard
}

type episodeShard struct {
	mu sync.RWMutex
	m  map[string]*episodeRec
	_  [32]byte // a shard to a cache line
}

func newEpisodeTable() *episodeTable {
	t := &episodeTable{seed: maphash.MakeSeed()}
	for i := range t.shards {
		t.shards[i].m = map[string]*episodeRec{}
	}
	return t
}

func (t *episodeTable) shard(id []byte) *episodeShard {
	return &t.shards[maphash.Bytes(t.seed, id)&uint64(len(t.shards)-1)]
}

func (t *episodeTable) shardOf(id string) *episodeShard {
	return &t.shards[maphash.String(t.seed, id)&uint64(len(t.shards)-1)] // = Bytes of its bytes
}

// get returns the record of running episode id, or nil.
func (t *episodeTable) get(id []byte) *episodeRec {
	sh := t.shard(id)
	sh.mu.RLock()
	r := sh.m[string(id)]
	sh.mu.RUnlock()
	return r
}

func (t *episodeTable) add(r *episodeRec) {
	sh := t.shardOf(r.id)
	sh.mu.Lock()
	sh.m[r.id] = r
	sh.mu.Unlock()
}

func (t *episodeTable) remove(id string) {
	sh := t.shardOf(id)
	sh.mu.Lock()
	delete(sh.m, id)
	sh.mu.Unlock()
}

// all returns every record.
func (t *episodeTable) all() []*episodeRec {
	var rs []*episodeRec
	for i := range t.shards {
		sh := &t.shards[i]
		sh.mu.RLock()
		for _, r := range sh.m {
			rs = append(rs, r)
		}
		sh.mu.RUnlock()
	}
	return rs
}
