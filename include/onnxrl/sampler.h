/*
 * onnxrl sampler: the C API.
 *
 * Embeds the sampler in a C or C++ program: batch inference with an exported policy
 * (onnxrl_policy_*), and RLlib's ExternalEnv episode API (onnxrl_env_*, onnxrl_episode_*),
 * where many threads ask for actions and their requests are answered by one batched
 * inference, and the experience is recorded for training.
 *
 * Conventions
 *   - Every function returns a status: ONNXRL_OK (0) or a negative ONNXRL_ERR_* code.
 *     onnxrl_last_error() then gives a message for the calling thread.
 *   - Handles are opaque. A released handle is never handed out again: a call with it fails
 *     with ONNXRL_ERR_STATE, a call with a pointer that is no handle of the right kind with
 *     ONNXRL_ERR_INVALID_ARGUMENT. Release functions accept NULL (ONNXRL_OK).
 *   - The caller owns every buffer. Observations and actions are float32, row-major,
 *     obs_size / action_size values per row (the sizes functions give them); a Discrete
 *     action is its index as a float. Buffers are read or written during the call only.
 *   - Every function is safe to call from any thread, on the same handle at once.
 *   - options_json is NULL, "" or a JSON object; unknown keys and values of the wrong type are
 *     ONNXRL_ERR_INVALID_ARGUMENT (a misspelt option never goes unnoticed).
 *
 * Process rules for hosts
 *   - The library holds a Go runtime. Load one Go-built shared library per process, never
 *     two. The library cannot be unloaded: dlclose leaves it mapped.
 *   - A host that installs signal handlers installs them with SA_ONSTACK and chains to the
 *     handler that was there before (the Go runtime's), for SIGSEGV, SIGBUS, SIGFPE,
 *     SIGPIPE and SIGPROF above all. A Go panic never reaches the host: it becomes
 *     ONNXRL_ERR_INTERNAL with the panic's message.
 *   - ONNX Runtime is loaded at the first onnxrl_policy_open or onnxrl_env_open, from the
 *     file named by ONNXRUNTIME_SHARED_LIBRARY_PATH, from beside this library, from the
 *     project's third_party/onnxruntime/ (looked for above the working directory and the
 *     executable), or from the system's library path, in that order.
 *   - Threads that wait in onnxrl_episode_get_action(s) each need a Go processor (a P) while
 *     they run Go code: the library raises GOMAXPROCS to the most such threads seen at once
 *     plus one (for the sampler), at most 256, and never lowers it. Without it, 8 simulator
 *     threads on 2 cores queue for 2 Ps at every call (measured: 0.64-1.1M against 1.08-1.24M
 *     actions/s). It changes the library's Go runtime only, which is the process's only one
 *     (a Go program imports the Go packages instead of loading this library, and they never
 *     change GOMAXPROCS): more threads may then run Go code at once, the garbage collector's
 *     background workers (about a quarter of GOMAXPROCS during a collection) grow with it,
 *     each new high stops the Go world for a moment, and Go's own updates of GOMAXPROCS from
 *     a container's CPU limit (Go 1.25 and later) stop. Turn it off with the env option
 *     "raise_gomaxprocs": false (that env's threads are not counted), or for the process by
 *     setting the GOMAXPROCS environment variable before the library loads.
 *
 * Devices (the option "device"; ONNXRL_ERR_DEVICE when this machine cannot give it)
 *   - "cpu" (default): ONNX Runtime's CPU provider.
 *   - "native": the project's execution provider (libonnxrl_ep.so, found beside this library,
 *     by ONNXRL_EP_LIBRARY or in the project's build/lib), its host backend: fused CPU
 *     kernels; nodes it does not support run on the CPU provider.
 *   - "native:cuda:N" ("native:cuda" is GPU 0): its CUDA backend on GPU N. Needs an NVIDIA
 *     driver (libcuda.so.1; no CUDA toolkit at build time) and NVRTC at run time (a CUDA
 *     toolkit or pip's nvidia wheels); inputs and outputs stay host memory, copied within a call.
 *     Never falls back to the host backend: without a driver, GPU N or NVRTC the open fails
 *     with ONNXRL_ERR_DEVICE and a message naming what is missing.
 *   - "cuda[:N]", "tensorrt[:N]": ONNX Runtime's own providers; they need a GPU build of ONNX
 *     Runtime (ONNXRUNTIME_SHARED_LIBRARY_PATH), else ONNXRL_ERR_DEVICE.
 */
#ifndef ONNXRL_SAMPLER_H
#define ONNXRL_SAMPLER_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define ONNXRL_ABI_VERSION 1
/* The release of this header; onnxrl_version() gives the loaded library's. */
#define ONNXRL_VERSION "0.1.0"

enum {
    ONNXRL_OK = 0,
    ONNXRL_ERR_INVALID_ARGUMENT = -1, /* NULL pointer, bad size, bad JSON, value outside its space */
    ONNXRL_ERR_NOT_FOUND = -2,        /* no such model file or bundled model, unknown episode */
    ONNXRL_ERR_STATE = -3,            /* released handle, ended or running episode, busy episode */
    ONNXRL_ERR_MODEL = -4,            /* not an ONNX model, unusable policy, runtime failure */
    ONNXRL_ERR_LIMIT = -5,            /* too many episodes, id too long, buffer too small */
    ONNXRL_ERR_TIMEOUT = -6,          /* no action within the env's timeout */
    ONNXRL_ERR_IO = -7,               /* the output file could not be written */
    ONNXRL_ERR_INTERNAL = -8,         /* a bug of the library: please report the message */
    ONNXRL_ERR_DEVICE = -9            /* device not available here: no driver, GPU, NVRTC, GPU
                                         build of ONNX Runtime or provider library (0.1.0 on;
                                         older libraries said ONNXRL_ERR_MODEL) */
};

typedef struct onnxrl_policy onnxrl_policy;
typedef struct onnxrl_env onnxrl_env;

/* ONNXRL_ABI_VERSION of the loaded library: compare it with the header's. */
int onnxrl_abi_version(void);

/* The loaded library's version: its release (ONNXRL_VERSION of its header), then "+" and the
   commit it was built from when the build recorded one ("0.1.0+d340733", ".dirty" added for
   uncommitted changes). A static string, valid for the life of the process. */
const char *onnxrl_version(void);

/* The message of this thread's last call that failed, or "" when its last call succeeded.
   Valid until this thread's next call into the library. Never NULL. */
const char *onnxrl_last_error(void);

/* A constant name for a status ("ONNXRL_OK", "ONNXRL_ERR_STATE", ...; "unknown status"). */
const char *onnxrl_status_name(int status);

/* ---- Batch inference ------------------------------------------------------------------ */

/* Opens a policy. model: an .onnx path (its policy spec from the sidecar <model>.policy.json
   or the model's metadata) or a bundled model name ("cartpole_mlp", ...).
   options_json keys: "device" ("cpu", "native", "native:cuda:N", "cuda[:N]", ...: see Devices
   above; default "cpu"), "threads" (ONNX Runtime
   intra-op threads per session, default 1), "seed" (default 0), "workers" (sessions, and so
   calls computed at once; default 1), "normalize_actions" (default true), "clip_actions"
   (default false), "max_model_bytes" (the largest model file read, default 1073741824, 1 GiB).
   The model must be a regular file under that size, checked before it is read: a larger one
   is ONNXRL_ERR_LIMIT, a device or pipe (/dev/zero) ONNXRL_ERR_MODEL. Recurrent policies are
   refused (ONNXRL_ERR_MODEL): the episode API keeps their state. */
int onnxrl_policy_open(const char *model, const char *options_json, onnxrl_policy **out);

int onnxrl_policy_sizes(const onnxrl_policy *p, int64_t *obs_size, int64_t *action_size);

/* The observation (which 0) or action (which 1) space of the policy as spaces JSON, as
   onnxrl_vec_env_space writes it (buf, cap and len likewise): for hosts that give a Discrete
   action as an integer rather than as its index in a float. */
int onnxrl_policy_space(const onnxrl_policy *p, int which, char *buf, size_t cap, size_t *len);

/* Computes actions for n observations (obs: n * obs_size values; actions: n * action_size).
   explore != 0 samples from the action distribution (seeded: the same seed and calls give the
   same actions), 0 takes its mode. logp (n values: the log-probability of each action) and
   values (n values: the value output; ONNXRL_ERR_INVALID_ARGUMENT for a model without one)
   may be NULL. An observation outside the observation space is ONNXRL_ERR_INVALID_ARGUMENT
   and nothing is written. n == 0 does nothing. */
int onnxrl_policy_act(onnxrl_policy *p, const float *obs, int64_t n, int explore,
                      float *actions, float *logp, float *values);

/* Releases p, waiting for its calls in flight. NULL: ONNXRL_OK; second close: ONNXRL_ERR_STATE. */
int onnxrl_policy_close(onnxrl_policy *p);

/* ---- Episodes (ExternalEnv) ----------------------------------------------------------- */

/* Opens an environment with inverted control: the host's simulator runs episodes and asks
   for actions; a sampler inside the library answers all pending requests of a step with one
   batched inference and records the transitions.
   options_json keys: "max_episodes" (running at once, default 100), "explore" (default
   true), "seed" (default 0), "out" (a file to record the sample batches in, as
   `sample run --out` writes: Parquet for a .parquet name, RLlib's offline JSON lines
   otherwise, rotated into x-000001.parquet, ... for x.parquet at "max_file_size" bytes,
   default 64 MiB; its directory must exist, or ONNXRL_ERR_IO as fopen would fail; default:
   record nothing), "format" ("auto" from the name, "json" or
   "parquet"), "compression" (Parquet: "snappy", the default, "zstd" or "none"), "max_wait_us" (once one
   request is pending, wait this long for more to batch; default 0), "max_batch" (most
   observations per inference, default min(1024, max_episodes)), "timeout_ms" (longest wait
   for an action, default 60000, negative: none), "fragment_length" (steps per episode slot
   in a sample batch, default 200), "flush_interval_ms" (with "out": at least this often the
   steps so far are written and the file closed durably, a Parquet file with its footer and
   renamed from .partial, so that a killed host loses at most this long's steps; default 5000,
   0: only complete fragments and at close), "raise_gomaxprocs" (default true: see the process rules
   above), "device", "threads", "normalize_actions", "clip_actions", "max_model_bytes" (as
   for onnxrl_policy_open). */
int onnxrl_env_open(const char *model, const char *options_json, onnxrl_env **out);

int onnxrl_env_sizes(const onnxrl_env *e, int64_t *obs_size, int64_t *action_size);

/* The env's observation (which 0) or action (which 1) space, as onnxrl_policy_space. */
int onnxrl_env_space(const onnxrl_env *e, int which, char *buf, size_t cap, size_t *len);

/* Starts an episode. episode_id NULL: an id is generated (a UUID, 36 characters) and written
   to id_out, NUL-terminated, which must then hold id_cap >= 37 bytes. With an episode_id,
   id_out may be NULL; when given, the id is copied there too. Ids are at most 1024 bytes.
   training_enabled 0: the episode runs but records nothing. ONNXRL_ERR_LIMIT beyond
   max_episodes or with id_cap too small (then no episode is started); ONNXRL_ERR_STATE for an
   id that is running or has ended. */
int onnxrl_episode_start(onnxrl_env *e, const char *episode_id, int training_enabled,
                         char *id_out, size_t id_cap);

/* Reports obs (obs_size values) and blocks until the sampler answers with the action
   (action_size values). A second get_action for an episode whose first still waits is
   ONNXRL_ERR_STATE. */
int onnxrl_episode_get_action(onnxrl_env *e, const char *episode_id, const float *obs, float *action);

/* get_action for n different episodes at once, from one thread (a vectorized simulator):
   obs holds n rows, actions receives n rows. All n are answered by the same sampler, in as
   few inferences as the batching allows. If episode i fails, episodes 0..i-1 have their
   actions written and i..n-1 do not; the message names episode i. */
int onnxrl_episode_get_actions(onnxrl_env *e, const char *const *episode_ids, int64_t n,
                               const float *obs, float *actions);

/* Reports obs with the action the simulator took itself (recorded instead of the policy's).
   Returns once obs is queued; while the episode's previous logged observation is not
   answered by the sampler yet, it first waits (back-pressure, as RLlib's log_action), and
   fails with ONNXRL_ERR_TIMEOUT after the env's timeout, recording nothing. */
int onnxrl_episode_log_action(onnxrl_env *e, const char *episode_id, const float *obs,
                              const float *action);

/* Adds reward to the reward of the episode's current step (summed until its next observation).
   A reward, or a step's sum of rewards, that float32 cannot hold (NaN, an infinity, beyond
   3.4028235e+38 in magnitude) is refused with ONNXRL_ERR_INVALID_ARGUMENT and not logged. */
int onnxrl_episode_log_returns(onnxrl_env *e, const char *episode_id, double reward);

/* log_returns for n episodes at once (rewards[i] to episode_ids[i], in order): one call
   instead of n, for a simulator that steps many agents. Every reward must fit float32, or
   nothing is logged. If episode i fails, episodes 0..i-1 have their rewards logged and
   i..n-1 do not; the message names episode i. */
int onnxrl_episode_log_returns_batch(onnxrl_env *e, const char *const *episode_ids, int64_t n,
                                     const double *rewards);

/* Ends the episode with its final observation, terminated (a terminal state). */
int onnxrl_episode_end(onnxrl_env *e, const char *episode_id, const float *obs);

/* Ends the episode with its final observation, truncated (a time limit, the simulator giving
   up): its return is bootstrapped from the value of obs. */
int onnxrl_episode_end_truncated(onnxrl_env *e, const char *episode_id, const float *obs);

/* Releases e, waiting for its calls in flight: episodes still running end truncated (with
   their last observation), everything sampled is written, and the file is closed. A write
   failure is reported here (ONNXRL_ERR_IO) after all the rest has been released.
   NULL: ONNXRL_OK; second close: ONNXRL_ERR_STATE. */
int onnxrl_env_close(onnxrl_env *e);

/* ---- Vectorized built-in environments ------------------------------------------------- */

/* num_envs sub-environments of a built-in environment (CartPole-v1, Pendulum-v1, ...: the
   single-agent ones `sample run --list-envs` lists), stepped together on the calling thread,
   with gymnasium 1.x's VectorEnv semantics and its default autoreset mode (next step): on the
   step after sub-environment i's episode ended (terminated or truncated), i is reset instead
   of stepped; its row then holds the first observation of the new episode, reward 0, both
   flags 0 and the reset's info, and its action is ignored (but still checked).
   The caller owns every buffer: obs num_envs * obs_size floats, rewards num_envs doubles,
   terminated and truncated num_envs bytes (0 or 1), actions num_envs * action_size floats
   (a Discrete action is its index as a float). Buffers are used during the call only. A step
   allocates nothing while no sub-environment reports an info. */
typedef struct onnxrl_vec_env onnxrl_vec_env;

/* Makes num_envs (1 .. 2^20) sub-environments of the environment registered as name.
   config_json: NULL, "" or a JSON object of the environment's config keys (as
   `sample run --env-config`: {"max_episode_steps": 200}). seed: sub-environment i draws its
   first episode's initial state with seed + i, unless the first reset passes seeds.
   ONNXRL_ERR_NOT_FOUND for an unknown name; ONNXRL_ERR_INVALID_ARGUMENT for a bad config or
   a multi-agent environment. */
int onnxrl_vec_env_open(const char *name, const char *config_json, int64_t num_envs,
                        uint64_t seed, onnxrl_vec_env **out);

int onnxrl_vec_env_sizes(const onnxrl_vec_env *v, int64_t *num_envs, int64_t *obs_size,
                         int64_t *action_size);

/* The observation (which 0) or action (which 1) space of one sub-environment as spaces JSON
   ({"type":"Box","low":[...],"high":[...],"shape":[4],"dtype":"float32"},
   {"type":"Discrete","n":2,"start":0}, ...; infinite bounds as "inf"/"-inf"), written to buf
   NUL-terminated. *len receives the length without the NUL; buf NULL with cap 0 asks for the
   length only; cap <= *len is ONNXRL_ERR_LIMIT. */
int onnxrl_vec_env_space(const onnxrl_vec_env *v, int which, char *buf, size_t cap, size_t *len);

/* Resets every sub-environment and writes the first observations into obs. seeds: n_seeds 0
   (seeds may be NULL): no reseeding (each keeps its random stream; the first reset uses the
   open seed + i); 1: sub-environment i is seeded with seeds[0] + i; num_envs: with seeds[i].
   infos_len (may be NULL) receives the length of the infos JSON (onnxrl_vec_env_infos), 0
   when no sub-environment reported an info. Must come before the first step. */
int onnxrl_vec_env_reset(onnxrl_vec_env *v, const uint64_t *seeds, int64_t n_seeds, float *obs,
                         size_t *infos_len);

/* Steps every sub-environment (or resets those whose episode ended on the previous step) and
   writes the next observations, rewards and flags. Every action row is checked first: one
   outside the action space is ONNXRL_ERR_INVALID_ARGUMENT naming its index, and nothing is
   stepped or written (Box actions are clipped by the environments, as gymnasium's are; NaN is
   refused). A step before the first reset is ONNXRL_ERR_STATE. A sub-environment that fails
   (a bug in it) gets reward 0, flags 0 and is reset on the next step; the call then returns
   ONNXRL_ERR_INTERNAL naming it after the others have stepped. infos_len as for reset. */
int onnxrl_vec_env_step(onnxrl_vec_env *v, const float *actions, float *obs, double *rewards,
                        uint8_t *terminated, uint8_t *truncated, size_t *infos_len);

/* The infos of the last reset or step in gymnasium's vector layout, as a JSON object: for each
   key k some sub-environment reported, "k" holds num_envs values (null where absent) and
   "_k" num_envs booleans (whether sub-environment i reported it); "" when none did (the
   built-in environments report none). buf, cap and len as for onnxrl_vec_env_space. */
int onnxrl_vec_env_infos(const onnxrl_vec_env *v, char *buf, size_t cap, size_t *len);

/* Releases v, waiting for a call in flight. NULL: ONNXRL_OK; second close: ONNXRL_ERR_STATE. */
int onnxrl_vec_env_close(onnxrl_vec_env *v);

/* ---- The sampler ---------------------------------------------------------------------- */

/* `sample run` as a library: built-in environments stepped by runners with a policy (or
   several, mapped to the agents), returning RLlib's sample batches one call at a time.
   Batches cross the boundary without a copy: as column views (onnxrl_sampler_columns) and
   through the Arrow C Data Interface (onnxrl_sampler_export_arrow). Both point into the
   batch's own memory and are valid until the next onnxrl_sampler_sample or
   onnxrl_sampler_close on the handle: copy what you keep. */
typedef struct onnxrl_sampler onnxrl_sampler;

/* The dtypes of a column. BOOL: one byte per value, 0 or 1. */
enum { ONNXRL_DTYPE_FLOAT32 = 1, ONNXRL_DTYPE_INT32 = 2, ONNXRL_DTYPE_INT64 = 3, ONNXRL_DTYPE_BOOL = 4 };

/* One column of a batch: a row-major array of shape[0] rows (ndim 1: one value each, shape[1]
   is 1; ndim 2: shape[1] values each). Names and columns as `sample run --out x.jsonl` writes
   them: obs, new_obs (float32 rows, the observation as the model takes it), actions (int64
   for Discrete, int64 rows for MultiDiscrete/MultiBinary, float32 rows otherwise), rewards
   (float32), terminateds, truncateds (bool), eps_id (int64), env_id, agent_index, t (int32),
   then when the batch has them action_dist_inputs, action_logp, vf_preds, state_in_K,
   state_out_K, seq_lens (int32, one per sequence: shape[0] is their number), advantages,
   value_targets (float32). */
typedef struct onnxrl_column {
    const char *name;
    const void *data; /* valid until the next sample or close */
    int32_t dtype;    /* ONNXRL_DTYPE_* */
    int32_t ndim;     /* 1 or 2 */
    int64_t shape[2];
} onnxrl_column;

struct ArrowArray;  /* the Arrow C Data Interface's structs (arrow/c/abi.h) */
struct ArrowSchema;

/* Opens a sampler. options_json: NULL, "" or a JSON object with `sample run`'s settings:
   "env" (a registered name, default "CartPole-v1"), "env_config" (a JSON object of the env's
   config keys), "num_envs" (default 1), "workers" (runners on threads of their own, each with
   its share of the sub-environments; default 1: the calling thread steps), "model" (an .onnx
   path, a bundled name or "random"; default the env's bundled policy) or "policies"
   ({"id": "model", ...}) with "policy_map" ([["agent glob", "id"], ...], the first match
   wins), "explore" (default true), "normalize_actions" (true), "clip_actions" (false),
   "seed" (0: sub-environment i is seeded with seed + i), "fragment_length" (200),
   "batch_mode" ("truncate_episodes" or "complete_episodes"), "count_steps_by"
   ("env_steps" or "agent_steps"), "gae" (false), "gamma" (0.99), "lambda" (0.95), "device"
   ("cpu"), "threads" (1), "remote" (false), "remote_wait_ms" (0; -1: all), "restart_failed"
   (false), "max_model_bytes" (1 GiB), "max_seq_len" (20: a recurrent policy's longest
   sequence), "state_in" ("per_row": state_in_K a row per row; "per_sequence": RLlib's row
   per seq_lens entry, which onnxrl_sampler_export_arrow refuses with ONNXRL_ERR_STATE).
   The same settings and seed give the batches
   `sample run` writes. ONNXRL_ERR_NOT_FOUND for an unknown env or model;
   ONNXRL_ERR_INVALID_ARGUMENT for bad options or policies that do not fit together. */
int onnxrl_sampler_open(const char *options_json, onnxrl_sampler **out);

/* What was built, as JSON: {"env", "model", "num_envs", "workers", "policies": [ids, sorted:
   the policy indexes of onnxrl_sampler_columns], "agents", "observation_space",
   "action_space", "fragment_length", "batch_mode", "seed", "explore"}. *json is
   NUL-terminated, owned by the sampler, valid until close; *len is its length. */
int onnxrl_sampler_info(const onnxrl_sampler *s, const char **json, size_t *len);

/* Steps until the next batch (one worker's fragment: fragment_length steps of each of its
   sub-environments in truncate_episodes mode) and makes it current; the previous batch's
   views end here. env_steps and agent_steps (may be NULL) receive the batch's counts. With
   several workers the batches come round-robin, worker 0's first, as `sample run` merges
   them. A failure of an environment or the model fails this call and every later one
   (ONNXRL_ERR_STATE). */
int onnxrl_sampler_sample(onnxrl_sampler *s, int64_t *env_steps, int64_t *agent_steps);

/* The current batch's columns of policy index policy (0 for a single policy): *cols points
   to *n_cols column views (owned by the sampler), *rows (may be NULL) receives the policy's
   rows in this batch (0: no columns). ONNXRL_ERR_STATE before the first sample. */
int onnxrl_sampler_columns(const onnxrl_sampler *s, int64_t policy, const onnxrl_column **cols,
                           int64_t *n_cols, int64_t *rows);

/* Exports the current batch as one record batch (a struct array of the columns of
   envrunner/arrowbatch: the views' columns, with bools as bitmaps, plus agent_id and
   module_id strings, seq_lens per row; the policies' rows one after the other) into the
   caller's array and schema (schema may be NULL). The buffers are the batch's own where
   their layout allows (float32 and integer columns of a single policy): no copy. The
   consumer releases both as the interface says; the data stays valid only until the next
   sample. ONNXRL_ERR_STATE before the first sample or for a batch without rows. */
int onnxrl_sampler_export_arrow(onnxrl_sampler *s, struct ArrowArray *array,
                                struct ArrowSchema *schema);

/* Metrics as JSON, under RLlib's new API stack names (docs/metrics.md):
   {"num_env_steps_sampled_lifetime", "num_agent_steps_sampled_lifetime",
   "num_episodes_lifetime", "num_env_step_failures", "batches", "num_episodes",
   "episode_return_mean", "episode_return_min", "episode_return_max", "episode_len_mean"
   (over the episodes that ended since the last call; null without one), "perf": {"mean_env_wait_ms", "mean_raw_obs_processing_ms",
   "mean_inference_ms", "mean_action_processing_ms", ...}}. *json is owned by the sampler,
   valid until the next metrics call or close. */
int onnxrl_sampler_metrics(onnxrl_sampler *s, const char **json, size_t *len);

/* Stops the workers and releases s, waiting for a call in flight. NULL: ONNXRL_OK; second
   close: ONNXRL_ERR_STATE. */
int onnxrl_sampler_close(onnxrl_sampler *s);

#ifdef __cplusplus
}
#endif

#endif /* ONNXRL_SAMPLER_H */
