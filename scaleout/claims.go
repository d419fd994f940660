package scaleout

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/nats-io/nats.go/jetstream"
)

// ClaimBucket is the key-value bucket in which the drains of run record the messages of each
// file they commit (key DURABLE.TOKEN, one per committed file; see Claims).
func ClaimBucket(run string) string { return "rl_" + run + "_drained" }

// MaxClaimRanges bounds the ranges of stream sequences one claim holds, so that it stays far
// under the server's default max payload (1 MiB): at most 20 bytes a range. A drain closes its
// file before it would hold more.
const MaxClaimRanges = 1 << 14

// Claims is the record, on the server, of the messages that the drains of one durable consumer
// committed to their files. A message acknowledged by nobody (a drain killed between its
// commit and its acknowledgements) is delivered again, after the consumer's AckWait, to any
// drain of the durable, one that never saw the killed drain's journal too: that drain asks the
// claims before writing a message delivered more than once, and drops it when it is claimed.
// A claim is the commit point of a file: it is created once, after the file was synced and
// before it is renamed into place or its messages acknowledged; messages are named by their
// stream sequence, which a redelivery keeps.
//
// Claims have no age limit, as no limit would keep every message written once. A claim is
// needed by the other drains of the durable as long as any of its messages can be delivered
// again (an unacknowledged message stays in the work-queue stream, which has no age limit,
// until a drain acknowledges it), and by the drain that made it when that drain was killed
// between the claim and renaming its file into place: restarted, it renames the file when the
// claim exists and removes it otherwise. A claim expired before that restart would have the
// drain remove a committed file whose messages the other drains had dropped as claimed: rows
// lost. So a drain killed and never restarted leaves the claims of the files it had not
// acknowledged (one or two, a few bytes each). A released claim leaves nothing: Release
// purges the key from the bucket's stream instead of leaving a delete marker, which every
// committed file used to leave for good (87 bytes each), and OpenClaims purges the markers
// that earlier drains left.
//
// A Claims is used by one goroutine.
type Claims struct {
	kv jetstream.KeyValue
	// stream is the bucket's stream (nil when it cannot be looked up): Release purges a
	// released key's subject (prefix, then the key) from it.
	stream  jetstream.Stream
	prefix  string
	durable string
	// read holds the claims read so far by key; Load reads only keys not in it.
	read map[string]SeqRanges
}

// OpenClaims opens (creating it when missing) run's claim bucket for the drains of durable.
func OpenClaims(ctx context.Context, js jetstream.JetStream, run, durable string) (*Claims, error) {
	if err := CheckName("run", run); err != nil {
		return nil, err
	}
	if err := CheckName("consumer", durable); err != nil {
		return nil, err
	}
	kv, err := js.KeyValue(ctx, ClaimBucket(run))
	if errors.Is(err, jetstream.ErrBucketNotFound) {
		kv, err = js.CreateKeyValue(ctx, jetstream.KeyValueConfig{Bucket: ClaimBucket(run),
			Description: "messages of run " + run + " committed to files by its drains", Storage: jetstream.FileStorage})
		if errors.Is(err, jetstream.ErrBucketExists) {
			kv, err = js.KeyValue(ctx, ClaimBucket(run))
		}
	}
	if err != nil {
		return nil, fmt.Errorf("scaleout: key-value bucket %s: %w", ClaimBucket(run), err)
	}
	c := &Claims{kv: kv, prefix: claimSubjects(run), durable: durable, read: map[string]SeqRanges{}}
	// Best effort: without them (a NATS account not allowed to look up or purge the stream),
	// released claims leave delete markers, as a plain key-value delete does.
	if st, err := js.Stream(ctx, claimStream(run)); err == nil {
		c.stream = st
		_ = kv.PurgeDeletes(ctx, jetstream.DeleteMarkersOlderThan(-1))
	}
	return c, nil
}

// claimStream is the stream of run's claim bucket, and claimSubjects the prefix of its keys'
// subjects (NATS's naming of key-value buckets: stream KV_BUCKET, subjects $KV.BUCKET.KEY).
func claimStream(run string) string { return "KV_" + ClaimBucket(run) }

func claimSubjects(run string) string { return "$KV." + ClaimBucket(run) + "." }

func (c *Claims) key(token string) string { return c.durable + "." + token }

// Commit records that the messages seqs are in the file committed under token (letters and
// digits, unique to the file). It fails when the claim exists already.
func (c *Claims) Commit(ctx context.Context, token string, seqs SeqRanges) error {
	if len(seqs) > MaxClaimRanges {
		return fmt.Errorf("scaleout: claim %s: %d ranges of messages, more than %d", token, len(seqs), MaxClaimRanges)
	}
	if _, err := c.kv.Create(ctx, c.key(token), seqs.Append(nil)); err != nil {
		return fmt.Errorf("scaleout: claim %s: %w", token, err)
	}
	c.read[c.key(token)] = seqs
	return nil
}

// Committed reports whether the claim token exists: whether a file prepared under token was
// committed (a drain restarted after being killed decides so about the file it left).
func (c *Claims) Committed(ctx context.Context, token string) (bool, error) {
	_, err := c.kv.Get(ctx, c.key(token))
	switch {
	case errors.Is(err, jetstream.ErrKeyNotFound):
		return false, nil
	case err != nil:
		return false, fmt.Errorf("scaleout: claim %s: %w", token, err)
	}
	return true, nil
}

// Tokens returns the tokens of the durable's claims.
func (c *Claims) Tokens(ctx context.Context) (map[string]bool, error) {
	keys, err := c.kv.ListKeysFiltered(ctx, c.durable+".*")
	if err != nil {
		return nil, fmt.Errorf("scaleout: list claims: %w", err)
	}
	defer keys.Stop()
	out := map[string]bool{}
	for k := range keys.Keys() {
		out[strings.TrimPrefix(k, c.durable+".")] = true
	}
	if err := ctx.Err(); err != nil { // the list stops early without saying so
		return nil, fmt.Errorf("scaleout: list claims: %w", err)
	}
	return out, nil
}

// Load reads the durable's claims it has not read yet (those of other drains included).
func (c *Claims) Load(ctx context.Context) error {
	keys, err := c.kv.ListKeysFiltered(ctx, c.durable+".*")
	if err != nil {
		return fmt.Errorf("scaleout: list claims: %w", err)
	}
	defer keys.Stop()
	var fresh []string
	listed := map[string]bool{}
	for k := range keys.Keys() {
		listed[k] = true
		if _, ok := c.read[k]; !ok {
			fresh = append(fresh, k)
		}
	}
	if err := ctx.Err(); err != nil { // the list stops early without saying so
		return fmt.Errorf("scaleout: list claims: %w", err)
	}
	for k := range c.read {
		if !listed[k] {
			delete(c.read, k) // released: its messages were acknowledged
		}
	}
	for _, k := range fresh {
		e, err := c.kv.Get(ctx, k)
		if errors.Is(err, jetstream.ErrKeyNotFound) {
			continue // released meanwhile: its messages were acknowledged
		}
		if err != nil {
			return fmt.Errorf("scaleout: claim %s: %w", k, err)
		}
		seqs, err := ParseSeqRanges(e.Value())
		if err != nil {
			return fmt.Errorf("scaleout: claim %s: %w", k, err)
		}
		c.read[k] = seqs
	}
	return nil
}

// Claimed reports whether a claim read so far holds the message of stream sequence seq.
func (c *Claims) Claimed(seq uint64) bool {
	for _, r := range c.read {
		if r.Contains(seq) {
			return true
		}
	}
	return false
}

// Release deletes the claim token once its messages are acknowledged: they are no longer in
// the stream, and never delivered again. The key's subject is purged from the bucket's
// stream, which leaves nothing behind; when that fails, the key is deleted (a delete marker).
func (c *Claims) Release(ctx context.Context, token string) error {
	key := c.key(token)
	delete(c.read, key)
	if c.stream != nil {
		if err := c.stream.Purge(ctx, jetstream.WithPurgeSubject(c.prefix+key)); err == nil {
			return nil
		}
	}
	if err := c.kv.Delete(ctx, key); err != nil && !errors.Is(err, jetstream.ErrKeyNotFound) {
		return fmt.Errorf("scaleout: release claim %s: %w", token, err)
	}
	return nil
}

// ReleaseGone releases those of the claims tokens whose messages have all left the stream
// (stream sequences below firstSeq, the stream's first message): the claims of a drain killed
// before it acknowledged, once another drain dropped their messages. Only the drain whose
// files they name may release them (see Claims.Committed).
func (c *Claims) ReleaseGone(ctx context.Context, tokens []string, firstSeq uint64) (released int, err error) {
	for _, tok := range tokens {
		e, err := c.kv.Get(ctx, c.key(tok))
		if errors.Is(err, jetstream.ErrKeyNotFound) {
			continue
		}
		if err != nil {
			return released, fmt.Errorf("scaleout: claim %s: %w", tok, err)
		}
		seqs, err := ParseSeqRanges(e.Value())
		if err != nil {
			return released, fmt.Errorf("scaleout: claim %s: %w", tok, err)
		}
		if len(seqs) > 0 && seqs[len(seqs)-1].Last >= firstSeq {
			continue
		}
		if err := c.Release(ctx, tok); err != nil {
			return released, err
		}
		released++
	}
	return released, nil
}

// SeqRange is the stream sequences First..Last.
type SeqRange struct{ First, Last uint64 }

// SeqRanges is a set of stream sequences; Add keeps it sorted and merged.
type SeqRanges []SeqRange

// Add adds seq (cheap when sequences come in increasing order, as a consumer delivers them).
func (s *SeqRanges) Add(seq uint64) {
	r := *s
	if n := len(r); n > 0 && r[n-1].Last < seq {
		if r[n-1].Last+1 == seq {
			r[n-1].Last = seq
		} else {
			r = append(r, SeqRange{seq, seq})
		}
		*s = r
		return
	} else if n == 0 {
		*s = append(r, SeqRange{seq, seq})
		return
	}
	i, _ := slices.BinarySearchFunc(r, seq, rangeAt)
	if i < len(r) && r[i].First <= seq {
		return // there already
	}
	r = slices.Insert(r, i, SeqRange{seq, seq})
	// Merge with the neighbours it touches.
	if i+1 < len(r) && r[i].Last+1 == r[i+1].First {
		r[i].Last = r[i+1].Last
		r = slices.Delete(r, i+1, i+2)
	}
	if i > 0 && r[i-1].Last+1 == r[i].First {
		r[i-1].Last = r[i].Last
		r = slices.Delete(r, i, i+1)
	}
	*s = r
}

// rangeAt orders a range against a sequence: 0 when it holds it.
func rangeAt(x SeqRange, q uint64) int {
	switch {
	case x.Last < q:
		return -1
	case x.First > q:
		return 1
	}
	return 0
}

// Contains reports whether seq is in s.
func (s SeqRanges) Contains(seq uint64) bool {
	_, found := slices.BinarySearchFunc(s, seq, rangeAt)
	return found
}

// Append appends the binary form of s to dst: a version byte, then per range the gap from the
// last range's end and the range's length less one, as uvarints.
func (s SeqRanges) Append(dst []byte) []byte {
	dst = append(dst, 1)
	var prev uint64
	for _, r := range s {
		dst = binary.AppendUvarint(dst, r.First-prev)
		dst = binary.AppendUvarint(dst, r.Last-r.First)
		prev = r.Last
	}
	return dst
}

// ParseSeqRanges parses the form of Append.
func ParseSeqRanges(b []byte) (SeqRanges, error) {
	if len(b) == 0 || b[0] != 1 {
		return nil, errors.New("scaleout: not a claim (unknown version)")
	}
	b = b[1:]
	var s SeqRanges
	var prev uint64
	for len(b) > 0 {
		gap, n := binary.Uvarint(b)
		if n <= 0 {
			return nil, errors.New("scaleout: claim truncated")
		}
		b = b[n:]
		span, n := binary.Uvarint(b)
		if n <= 0 {
			return nil, errors.New("scaleout: claim truncated")
		}
		b = b[n:]
		first := prev + gap
		if first < prev || first+span < first || (len(s) > 0 && gap == 0) {
			return nil, errors.New("scaleout: claim out of order")
		}
		s = append(s, SeqRange{first, first + span})
		prev = first + span
	}
	return s, nil
}
