package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/onnxrl/sampler/scaleout"
)

// A drain commits each segment before it acknowledges the segment's messages, so that the
// drains of one --durable, killed at any point and restarted or not, deliver every message to
// the files exactly once:
//
//  1. the segment is written as NAME.partial, closed and synced;
//  2. its message ids are appended to the journal, OUT.ids, under a line "#p TOKEN NAME"
//     (TOKEN: random, the segment's claim), and the journal is synced: the segment is
//     prepared;
//  3. the stream sequences of its messages are recorded on the server, in the claim
//     DURABLE.TOKEN of the run's claim bucket (scaleout.Claims): the segment is committed.
//     Only while the server's --ack-wait clock of every one of those messages, restarted
//     before step 1, has surely not run out: none can have been delivered to another drain;
//  4. NAME.partial is renamed to NAME (and the directory synced);
//  5. the messages are acknowledged, then the claim is released.
//
// A message the server delivers again (killed between 3 and 5) is dropped by any drain of the
// durable, one that never saw this journal too: a drain asks the claims about every message
// delivered more than once. A restarted drain reads the journal: a prepared segment still
// under its .partial name is renamed when its claim exists (killed between 3 and 4) and
// removed when it does not (killed before 3: its messages come again); a .partial file the
// journal does not name is removed (killed before 2); the ids of the committed segments are
// dropped when delivered again, and the claims of its segments whose messages have all left
// the stream are released. Journals of drains before the claims name a committed segment
// "# NAME".
const (
	partialSuffix = ".partial"
	journalSuffix = ".ids"
)

// drainJournal is an open journal.
type drainJournal struct {
	f    *os.File
	buf  []byte
	path string
}

// openDrainJournal reads the journal of out (if any) into seen, finishes or removes what a
// killed drain left behind (claims decides about the segments it prepared), and opens the
// journal for appending. owned are the tokens of the journal's committed segments whose
// claims exist.
func openDrainJournal(ctx context.Context, out string, seen *idSet, claims *scaleout.Claims, stderr io.Writer) (j *drainJournal, owned []string, err error) {
	path := out + journalSuffix
	segs, err := readDrainJournal(path)
	if err != nil {
		return nil, nil, err
	}
	committed, owned, err := committedSegments(ctx, segs, seen, claims)
	if err != nil {
		return nil, nil, err
	}
	if err := finishPartials(out, committed, stderr); err != nil {
		return nil, nil, err
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o644)
	if err != nil {
		return nil, nil, fmt.Errorf("open the drain journal: %w", err)
	}
	return &drainJournal{f: f, path: path}, owned, nil
}

// journalSegment is a segment as the journal has it.
type journalSegment struct {
	name, token string // token "": committed before the claims
	ids         []string
}

// readDrainJournal reads the journal at path (none: no segments).
func readDrainJournal(path string) ([]journalSegment, error) {
	f, err := os.Open(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var segs []journalSegment
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if rest, ok := strings.CutPrefix(line, "#p "); ok {
			token, name, _ := strings.Cut(rest, " ")
			segs = append(segs, journalSegment{name: name, token: token})
		} else if name, ok := strings.CutPrefix(line, "# "); ok {
			segs = append(segs, journalSegment{name: name})
		} else if line != "" && len(segs) > 0 {
			segs[len(segs)-1].ids = append(segs[len(segs)-1].ids, line)
		}
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("read the drain journal %s: %w", path, err)
	}
	return segs, nil
}

// committedSegments returns the names of the journal's committed segments, whose message
// ids it adds to seen, and the tokens of those whose claims exist (owned).
func committedSegments(ctx context.Context, segs []journalSegment, seen *idSet, claims *scaleout.Claims) (committed map[string]bool, owned []string, err error) {
	var claimed map[string]bool
	for _, s := range segs {
		if s.token != "" {
			if claimed, err = claims.Tokens(ctx); err != nil {
				return nil, nil, err
			}
			break
		}
	}
	committed = map[string]bool{}
	for _, s := range segs {
		_, statErr := os.Stat(s.name)
		// A prepared segment is committed when its claim exists; once renamed into place,
		// also after its claim was released (its messages acknowledged).
		if s.token != "" && !claimed[s.token] && statErr != nil {
			continue
		}
		committed[s.name] = true
		if s.token != "" && claimed[s.token] {
			owned = append(owned, s.token)
		}
		for _, id := range s.ids {
			seen.add(id)
		}
	}
	return committed, owned, nil
}

// finishPartials renames the committed segments a killed drain left under their .partial
// names into place, and removes the uncommitted ones.
func finishPartials(out string, committed map[string]bool, stderr io.Writer) error {
	partials, err := filepath.Glob(globEscape(out[:len(out)-len(filepath.Ext(out))]) + "*" + partialSuffix)
	if err != nil {
		return err
	}
	for _, p := range partials {
		name := strings.TrimSuffix(p, partialSuffix)
		if !isSegmentName(out, name) {
			continue
		}
		if committed[name] {
			if err := os.Rename(p, name); err != nil {
				return fmt.Errorf("finish the committed segment %s: %w", name, err)
			}
			fmt.Fprintf(stderr, "sample drain: %s was committed by a drain that stopped before renaming it: renamed\n", name)
			continue
		}
		if err := os.Remove(p); err != nil {
			return fmt.Errorf("remove the uncommitted segment %s: %w", p, err)
		}
		fmt.Fprintf(stderr, "sample drain: removed %s, left uncommitted by a drain that stopped (its messages come again)\n", p)
	}
	return nil
}

// isSegmentName reports whether name is out or one of its numbered segments.
func isSegmentName(out, name string) bool {
	if name == out {
		return true
	}
	ext := filepath.Ext(out)
	base := out[:len(out)-len(ext)] + "-"
	num, ok := strings.CutPrefix(name, base)
	if !ok {
		return false
	}
	num, ok = strings.CutSuffix(num, ext)
	if !ok || len(num) < 6 {
		return false
	}
	for _, c := range num {
		if c < '0' || c > '9' {
			return false
		}
	}
	return true
}

// prepare records the ids of segment name, to be claimed under token, and syncs the journal
// (step 2).
func (j *drainJournal) prepare(name, token string, ids []string) error {
	j.buf = append(j.buf[:0], "#p "...)
	j.buf = append(j.buf, token...)
	j.buf = append(j.buf, ' ')
	j.buf = append(j.buf, name...)
	j.buf = append(j.buf, '\n')
	for _, id := range ids {
		j.buf = append(j.buf, id...)
		j.buf = append(j.buf, '\n')
	}
	if _, err := j.f.Write(j.buf); err != nil {
		return fmt.Errorf("write the drain journal %s: %w", j.path, err)
	}
	if err := j.f.Sync(); err != nil {
		return fmt.Errorf("sync the drain journal %s: %w", j.path, err)
	}
	return nil
}

// close closes the journal, and removes it when it is empty (no drain into this --out ever
// committed a segment). kept reports whether it is still there.
func (j *drainJournal) close() (kept bool, err error) {
	fi, statErr := j.f.Stat()
	if err := j.f.Close(); err != nil {
		return true, err
	}
	if statErr == nil && fi.Size() == 0 {
		return false, os.Remove(j.path)
	}
	return true, nil
}

// publishSegment renames a committed segment into place and syncs its directory (step 3).
func publishSegment(name string) error {
	if err := os.Rename(name+partialSuffix, name); err != nil {
		return err
	}
	d, err := os.Open(filepath.Dir(name))
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}

// crashPoint lets a test kill the drain at a step of the commit (SAMPLE_DRAIN_CRASH=prepare:
// after step 2, before the claim; =claim: after step 3, before the rename; =rename: after
// step 4, before the acknowledgements).
func crashPoint(step string) {
	if os.Getenv("SAMPLE_TEST_MAIN") == "1" && os.Getenv("SAMPLE_DRAIN_CRASH") == step {
		syscall.Kill(os.Getpid(), syscall.SIGKILL)
		select {}
	}
}

// globEscape quotes s for filepath.Glob.
func globEscape(s string) string {
	r := strings.NewReplacer(`\`, `\\`, `*`, `\*`, `?`, `\?`, `[`, `\[`)
	return r.Replace(s)
}
