package main

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"syscall"
)

// A drain commits each segment before it acknowledges the segment's messages, so that a
// drain killed at any point, restarted, delivers every message to the files exactly once:
//
//  1. the segment is written as NAME.partial, closed and synced;
//  2. its message ids are appended to the journal, OUT.ids, under a line "# NAME", and the
//     journal is synced: the segment is committed;
//  3. NAME.partial is renamed to NAME (and the directory synced);
//  4. the messages are acknowledged.
//
// A restarted drain reads the journal: the ids in it are dropped when the server delivers
// them again (killed between 2 and 4), a committed segment still under its .partial name is
// renamed (killed between 2 and 3), and a .partial file the journal does not name is removed:
// its messages were never acknowledged and come again (killed before 2).
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
// killed drain left behind, and opens the journal for appending.
func openDrainJournal(out string, seen *idSet, stderr io.Writer) (*drainJournal, error) {
	path := out + journalSuffix
	committed := map[string]bool{}
	if f, err := os.Open(path); err == nil {
		sc := bufio.NewScanner(f)
		sc.Buffer(make([]byte, 64<<10), 1<<20)
		for sc.Scan() {
			line := sc.Text()
			if name, ok := strings.CutPrefix(line, "# "); ok {
				committed[name] = true
			} else if line != "" {
				seen.add(line)
			}
		}
		err := sc.Err()
		f.Close()
		if err != nil {
			return nil, fmt.Errorf("read the drain journal %s: %w", path, err)
		}
	} else if !errors.Is(err, os.ErrNotExist) {
		return nil, err
	}
	partials, err := filepath.Glob(globEscape(out[:len(out)-len(filepath.Ext(out))]) + "*" + partialSuffix)
	if err != nil {
		return nil, err
	}
	for _, p := range partials {
		name := strings.TrimSuffix(p, partialSuffix)
		if !isSegmentName(out, name) {
			continue
		}
		if committed[name] {
			if err := os.Rename(p, name); err != nil {
				return nil, fmt.Errorf("finish the committed segment %s: %w", name, err)
			}
			fmt.Fprintf(stderr, "sample drain: %s was committed by a drain that stopped before renaming it: renamed\n", name)
			continue
		}
		if err := os.Remove(p); err != nil {
			return nil, fmt.Errorf("remove the uncommitted segment %s: %w", p, err)
		}
		fmt.Fprintf(stderr, "sample drain: removed %s, left uncommitted by a drain that stopped (its messages come again)\n", p)
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o644)
	if err != nil {
		return nil, fmt.Errorf("open the drain journal: %w", err)
	}
	return &drainJournal{f: f, path: path}, nil
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

// commit records the ids of segment name and syncs the journal (step 2).
func (j *drainJournal) commit(name string, ids []string) error {
	j.buf = append(j.buf[:0], "# "...)
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

// crashPoint lets a test kill the drain at a step of the commit (SAMPLE_DRAIN_CRASH=journal:
// after step 2, before the rename; =rename: after step 3, before the acknowledgements).
func crashPoint(step string) {
	if os.Getenv("SAMPLE_TEST_MAIN") == "1" && os.Getenv("SAMPLE_DRAIN_CRASH") == step {
		syscall.Kill(os.Getpid(), syscall.SIGKILL)
		select {}
	}
}
