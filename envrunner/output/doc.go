// Package output writes sample batches to files, as Parquet (one row per transition, the
// columns of RLlib's offline data API; see envrunner/arrowbatch) or as JSON lines in RLlib's
// old offline JSON layout, so that experience collected by the sampler can be read by RLlib's
// Parquet-based offline API, its JsonReader, pyarrow or json.loads; and reads them back.
//
// # Parquet
//
// One row group is one MultiAgentBatch (its policies' rows one after the other, module_id
// telling them apart), written column by column from the batches' own slices. The schema is
// what pqarrow makes of the arrowbatch schema, which is stored too, so that Arrow readers
// give fixed-size lists back; the footer is made with arrow-go's metadata builder. Data
// pages (version 2, 64 KiB of values) are compressed with Snappy unless
// Options.Compression says otherwise; a page that the codec does not shrink by 1/16 is
// stored uncompressed, as version 2 pages allow (Snappy does not shrink the float columns of
// samples). Scalar
// columns have statistics, vector columns none. agent_id and module_id are
// dictionary-encoded (a batch has one module and few agents); everything else is PLAIN.
// Every page header has its CRC-32 (see MetaChecksums). The file's key-value metadata holds
// Options.Metadata (see Source for the keys the sampler writes) and MetaEnvSteps, the
// EnvSteps of each row group, with which ReadParquet gives the batches back as they were
// written. A run of no batches leaves a valid file of no rows.
//
// The pages are encoded here rather than by arrow-go's column writers because the schema is
// fixed and known: the levels of a vector column (a list of a fixed width, never null) are
// the same for every row and are written as one run or a periodic pattern made once, the
// values of float and integer columns are the batches' memory handed to the codec as they
// are. arrow-go's writers encoded the levels value by value (with the codec, about 320 ns of
// CPU a row of CartPole, about half of it levels and statistics), which with two workers sampling
// on two cores cut sample run to 0.47-0.58 of its speed without --out. The writer here takes
// about 60 ns of CPU a row (sample run, CartPole-v1, 256 sub-environments, 2 workers, 8M
// steps: 3.95 s of CPU against 3.37 to 3.52 s without --out, 6.05 s with arrow-go's).
//
// A Parquet file holds one layout (arrowbatch.Layout: the widths and optional columns). The
// file at the path gets the policies whose columns are those of the first policy placed (the
// first id, in sorted order, of the first batch with rows); a policy with other columns (an
// LSTM beside MLPs, another observation size) gets a file set of its own, PolicyPath:
// x-<policy>.parquet, rotated into x-<policy>-000001.parquet, .... A policy stays where its
// first rows went. Each batch gives one row group to each file set it has rows for, with the
// batch's EnvSteps; so a reader of one policy's files reads x-<policy>*.parquet, and a reader
// of all reads every file. JSON lines hold any mix of policies in one file.
//
// # JSON lines
//
// Each line is one JSON object, columns uncompressed. A batch of the single default policy is
// a SampleBatch:
//
//	{"type":"SampleBatch","obs":[[0.1,-0.2,0.03,0.0]],"new_obs":[[0.1,-0.4,0.03,0.3]],"actions":[1],"rewards":[1.0],"terminateds":[false],"truncateds":[false],"eps_id":[7],"env_id":[0],"agent_index":[0],"agent_id":["agent0"],"t":[0],"infos":[{}]}
//
// anything else a MultiAgentBatch whose "count" is the number of environment steps:
//
//	{"type":"MultiAgentBatch","count":N,"policy_batches":{"<policy>":{<columns>},...}}
//
// Columns come in a fixed order (obs, new_obs, actions, rewards, terminateds, truncateds,
// eps_id, env_id, agent_index, agent_id (the agent id the environment gave; left out by files
// written before it was recorded), t, infos (RLlib's: each row's info, reported with its
// new_obs, as an object; {} for a row without one), action_dist_inputs, action_logp, vf_preds, state_in_k,
// state_out_k, seq_lens, advantages, value_targets), the optional ones only when the batch has
// them. Vector columns are lists of rows. Actions of Discrete spaces are a flat list of
// integers, of MultiDiscrete and MultiBinary spaces rows of integers, of other spaces rows of
// floats. Floats are float32 values in their shortest form that reads back to the same
// float32, always as floats (1.0, -0.0, 1e+06), so that Python's json module, pandas and
// Arrow read float columns; integers (actions of integer spaces, ids, t) have no point. NaN and infinities are written NaN, Infinity and -Infinity, which Python's json
// module (and so RLlib) reads. The same batch always gives the same bytes.
//
// AppendJSON encodes into a caller's buffer without allocating; Decode reads a line back (for
// tests and tools), inferring integer actions and widths from the line.
//
// # Writing files
//
// A Writer encodes and writes batches on a goroutine of its own, in the format of
// Options.Format or of the path's extension (.parquet: Parquet, anything else: JSON lines).
// JSON lines are encoded by several goroutines at once (Options.Encoders), written in order.
// On Linux the files keep a bounded share of the page cache: every 32 MiB the writer starts
// the write-back of the new data and drops the data before it once that is on the disk.
//
//	w, err := output.NewWriter("out/x.jsonl", output.Options{
//		MaxFileSize: 64 << 20,
//		OnWritten:   func(m *envrunner.MultiAgentBatch) { free <- m }, // recycle the batch
//	})
//	...
//	for m := range batches {
//		if err := w.Write(m); err != nil { ... } // blocks while the queue is full
//	}
//	err = w.Close() // writes out the queue, flushes, fsyncs
//
// Ownership: Write hands the batch over; the caller must not touch it until OnWritten gives it
// back (every accepted batch comes back exactly once, in order, even when writing failed).
// The queue is bounded: a producer faster than the disk waits in Write, nothing is dropped.
//
// Incomplete files: each file is written as NAME.partial (PartialSuffix) and renamed to NAME
// once it is complete (Parquet footer written, fsynced, the directory synced), so that a
// process killed, or a full disk, never leaves a file under its name that a reader cannot
// read: readers (ReadFile, sample convert) refuse or skip .partial files and say so. Files
// and Stats name and count only complete files; after a failure the file being written stays
// under its .partial name and Close's error names it. A device or pipe (/dev/stdout), or a
// Writer with Options.InPlace, is written under its own name.
//
// Rotation: with Options.MaxFileSize set, the first file is exactly the given path; once a
// file has reached MaxFileSize bytes it is closed, and the next line starts a new file named
// after the path with a six-digit counter before the extension: x.jsonl, x-000001.jsonl,
// x-000002.jsonl, ... (x.parquet, x-000001.parquet, ...). A line or row group is never split
// across files, and a Parquet file gets its footer before the next starts, so every file is
// valid on its own.
//
// Flushing: Flush waits for everything queued so far to be written and makes it readable:
// each file that got a batch is closed as when full (a Parquet file is readable only once
// closed: its footer comes last), and the next batch starts the next rotated file. With
// Options.FlushInterval the writer does the same by itself at that interval, so that a
// SIGKILL loses at most that long's batches in either format. Close writes out the queue and
// closes the files. A write error (disk full, a file that cannot be created) is sticky: it
// names the file and is returned by the next Write, Flush and Close, and producers are never
// left blocked by a failed writer.
package output
