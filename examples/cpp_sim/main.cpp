// cpp_sim: a C++ simulator driving the onnxrl sampler through its C API (ExternalEnv style).
//
// The simulation stays in the host program: N threads each step M CartPole-v1 agents with their
// own physics (gymnasium's CartPoleEnv, Euler integration), and ask the library for actions.
// Each thread makes one onnxrl_episode_get_actions and one onnxrl_episode_log_returns_batch call
// per step for all its live agents; the sampler inside the library answers the pending requests
// of all threads with batched inferences of the policy, and records the transitions (to --out,
// as RLlib's offline JSON).
//
//   cpp_sim [--threads 8] [--agents 128] [--episodes 2048] [--seed 0] [--model cartpole_mlp]
//           [--out FILE] [--min-return X] [--max-wait-us 100] [--max-batch 256]
//
// Prints mean_return=..., episodes=..., actions_per_sec=... (one per line); with --min-return,
// exits 1 when the mean return is below X. Any error status is printed with its message and
// ends the program with exit status 1.
#include <onnxrl/sampler.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <random>
#include <string>
#include <thread>
#include <vector>

namespace {

// ---- Errors ------------------------------------------------------------------------------

// Prints a failed call's status and message, and ends the process (from any thread: the C API
// has nothing to unwind, and no exception crosses into it).
[[noreturn]] void die(const char* what, int status) {
    const std::string message = onnxrl_last_error();  // copied first: valid until the next call
    std::fprintf(stderr, "cpp_sim: %s: %s: %s\n", what, onnxrl_status_name(status), message.c_str());
    std::fflush(nullptr);
    std::_Exit(1);
}

void check(int status, const char* what) {
    if (status != ONNXRL_OK) die(what, status);
}

[[noreturn]] void usage_error(const std::string& message) {
    std::fprintf(stderr, "cpp_sim: %s\n", message.c_str());
    std::fprintf(stderr,
                 "usage: cpp_sim [--threads N] [--agents M] [--episodes E] [--seed S] [--model NAME|PATH]\n"
                 "               [--out FILE] [--min-return X] [--max-wait-us W] [--max-batch B]\n");
    std::exit(2);
}

// ---- CartPole-v1 -------------------------------------------------------------------------

// gymnasium's CartPoleEnv (CartPole-v1) with the default Euler kinematics integrator.
class CartPole {
public:
    static constexpr double kGravity = 9.8;
    static constexpr double kMassCart = 1.0;
    static constexpr double kMassPole = 0.1;
    static constexpr double kTotalMass = kMassPole + kMassCart;
    static constexpr double kLength = 0.5;  // half the pole's length
    static constexpr double kPoleMassLength = kMassPole * kLength;
    static constexpr double kForceMag = 10.0;
    static constexpr double kTau = 0.02;  // seconds between state updates
    static constexpr double kPi = 3.14159265358979323846;
    static constexpr double kThetaThreshold = 12 * 2 * kPi / 360;  // 12 degrees
    static constexpr double kXThreshold = 2.4;
    static constexpr int kMaxSteps = 500;  // CartPole-v1's TimeLimit

    // Starts an episode: each state variable uniform in [-0.05, 0.05].
    void reset(std::mt19937_64& rng) {
        std::uniform_real_distribution<double> u(-0.05, 0.05);
        for (double& v : state_) v = u(rng);
        steps_ = 0;
    }

    // One step with action 0 (push left) or 1 (push right); returns true when terminated.
    bool step(int action) {
        auto [x, x_dot, theta, theta_dot] = state_;
        const double force = action == 1 ? kForceMag : -kForceMag;
        const double costheta = std::cos(theta);
        const double sintheta = std::sin(theta);
        const double temp = (force + kPoleMassLength * theta_dot * theta_dot * sintheta) / kTotalMass;
        const double thetaacc = (kGravity * sintheta - costheta * temp) /
                                (kLength * (4.0 / 3.0 - kMassPole * costheta * costheta / kTotalMass));
        const double xacc = temp - kPoleMassLength * thetaacc * costheta / kTotalMass;

        x = x + kTau * x_dot;
        x_dot = x_dot + kTau * xacc;
        theta = theta + kTau * theta_dot;
        theta_dot = theta_dot + kTau * thetaacc;
        state_ = {x, x_dot, theta, theta_dot};
        steps_++;
        return x < -kXThreshold || x > kXThreshold || theta < -kThetaThreshold || theta > kThetaThreshold;
    }

    bool truncated() const { return steps_ >= kMaxSteps; }

    // The observation: the state as float32.
    void observe(float* obs) const {
        for (std::size_t i = 0; i < state_.size(); i++) obs[i] = static_cast<float>(state_[i]);
    }

private:
    std::array<double, 4> state_{};  // x, x_dot, theta, theta_dot
    int steps_ = 0;
};

// ---- One simulator thread ----------------------------------------------------------------

struct Options {
    int threads = 8;
    int agents = 128;
    long episodes = 2048;
    std::uint64_t seed = 0;
    std::string model = "cartpole_mlp";
    std::string out;
    // The batching of BenchmarkExternalEnv (benchmarks/): once a request is pending, wait this
    // long for more; at most a quarter of the agents per inference, so that the sampler's
    // inference of one batch overlaps the other threads' physics (0: min(1024, all agents)).
    long max_wait_us = 100;
    long max_batch = 256;
    double min_return = 0;
    bool has_min_return = false;
};

struct ThreadResult {
    std::vector<double> returns;  // of each finished episode
    long actions = 0;
};

struct Agent {
    CartPole sim;
    char id[64] = {0};
    double ret = 0;
    bool live = false;
};

// Runs `quota` episodes on `agents` agents at once, one get_actions call per step for all of
// them; an agent whose episode ends starts another while the quota allows.
void simulate(onnxrl_env* env, int thread_index, int agents, long quota, std::uint64_t seed, ThreadResult& result) {
    std::mt19937_64 rng(seed + static_cast<std::uint64_t>(thread_index));
    std::vector<Agent> pool(static_cast<std::size_t>(agents));
    long started = 0;

    auto start = [&](Agent& a) {
        check(onnxrl_episode_start(env, nullptr, 1, a.id, sizeof a.id), "onnxrl_episode_start");
        a.sim.reset(rng);
        a.ret = 0;
        a.live = true;
        started++;
    };
    for (Agent& a : pool) {
        if (started == quota) break;
        start(a);
    }

    std::vector<Agent*> live;
    std::vector<const char*> ids;
    std::vector<float> obs, actions;
    std::vector<double> rewards;
    enum Done : unsigned char { kRunning, kTerminated, kTruncated };
    std::vector<Done> done;
    float final_obs[4];
    for (;;) {
        live.clear();
        ids.clear();
        obs.clear();
        for (Agent& a : pool) {
            if (!a.live) continue;
            live.push_back(&a);
            ids.push_back(a.id);
            float o[4];
            a.sim.observe(o);
            obs.insert(obs.end(), o, o + 4);
        }
        if (live.empty()) break;
        const auto n = static_cast<std::int64_t>(live.size());
        actions.assign(live.size(), -1.0f);
        rewards.assign(live.size(), 0.0);
        done.assign(live.size(), kRunning);
        check(onnxrl_episode_get_actions(env, ids.data(), n, obs.data(), actions.data()),
              "onnxrl_episode_get_actions");
        result.actions += n;

        // Step every agent, log the step's rewards in one call, then end the finished episodes
        // (a reward belongs to the step before the end) and start others in their place.
        for (std::size_t i = 0; i < live.size(); i++) {
            Agent& a = *live[i];
            const float action = actions[i];
            if (action != 0.0f && action != 1.0f) {
                std::fprintf(stderr, "cpp_sim: episode %s: action %g is not 0 or 1\n", a.id, action);
                std::_Exit(1);
            }
            done[i] = a.sim.step(static_cast<int>(action)) ? kTerminated : a.sim.truncated() ? kTruncated : kRunning;
            rewards[i] = 1.0;
            a.ret += rewards[i];
        }
        check(onnxrl_episode_log_returns_batch(env, ids.data(), n, rewards.data()), "onnxrl_episode_log_returns_batch");
        for (std::size_t i = 0; i < live.size(); i++) {
            if (done[i] == kRunning) continue;
            Agent& a = *live[i];
            a.sim.observe(final_obs);
            if (done[i] == kTerminated) {
                check(onnxrl_episode_end(env, a.id, final_obs), "onnxrl_episode_end");
            } else {
                check(onnxrl_episode_end_truncated(env, a.id, final_obs), "onnxrl_episode_end_truncated");
            }
            result.returns.push_back(a.ret);
            a.live = false;
            if (started < quota) start(a);
        }
    }
}

// ---- Command line ------------------------------------------------------------------------

long parse_long(const char* flag, const char* text, long min) {
    char* end = nullptr;
    errno = 0;
    const long v = std::strtol(text, &end, 10);
    if (errno != 0 || end == text || *end != '\0' || v < min) {
        usage_error(std::string(flag) + " wants an integer >= " + std::to_string(min) + ", got \"" + text + "\"");
    }
    return v;
}

Options parse_args(int argc, char** argv) {
    Options o;
    for (int i = 1; i < argc; i++) {
        const std::string flag = argv[i];
        if (flag == "-h" || flag == "--help") {
            std::printf(
                "usage: cpp_sim [--threads N] [--agents M] [--episodes E] [--seed S] [--model NAME|PATH]\n"
                "               [--out FILE] [--min-return X] [--max-wait-us W] [--max-batch B]\n");
            std::exit(0);
        }
        if (i + 1 >= argc) usage_error(flag + " needs a value (or is unknown)");
        const char* value = argv[++i];
        if (flag == "--threads") {
            o.threads = static_cast<int>(parse_long("--threads", value, 1));
        } else if (flag == "--agents") {
            o.agents = static_cast<int>(parse_long("--agents", value, 1));
        } else if (flag == "--episodes") {
            o.episodes = parse_long("--episodes", value, 1);
        } else if (flag == "--seed") {
            o.seed = static_cast<std::uint64_t>(parse_long("--seed", value, 0));
        } else if (flag == "--max-wait-us") {
            o.max_wait_us = parse_long("--max-wait-us", value, 0);
        } else if (flag == "--max-batch") {
            o.max_batch = parse_long("--max-batch", value, 0);
        } else if (flag == "--model") {
            o.model = value;
        } else if (flag == "--out") {
            o.out = value;
        } else if (flag == "--min-return") {
            char* end = nullptr;
            o.min_return = std::strtod(value, &end);
            if (end == value || *end != '\0' || !std::isfinite(o.min_return)) {
                usage_error(std::string("--min-return wants a number, got \"") + value + "\"");
            }
            o.has_min_return = true;
        } else {
            usage_error("unknown flag " + flag);
        }
    }
    if (o.threads > 1024 || o.agents > 1000000 || static_cast<long>(o.threads) * o.agents > 1000000) {
        usage_error("--threads * --agents must be at most 1000000");
    }
    return o;
}

// A JSON string literal of s.
std::string json_string(const std::string& s) {
    std::string out = "\"";
    for (const char c : s) {
        switch (c) {
            case '"': out += "\\\""; break;
            case '\\': out += "\\\\"; break;
            case '\n': out += "\\n"; break;
            case '\t': out += "\\t"; break;
            default:
                if (static_cast<unsigned char>(c) < 0x20) {
                    char buf[8];
                    std::snprintf(buf, sizeof buf, "\\u%04x", c);
                    out += buf;
                } else {
                    out += c;
                }
        }
    }
    return out + "\"";
}

}  // namespace

int main(int argc, char** argv) {
    const Options opt = parse_args(argc, argv);

    if (onnxrl_abi_version() != ONNXRL_ABI_VERSION) {
        std::fprintf(stderr, "cpp_sim: library ABI version %d, header %d\n", onnxrl_abi_version(), ONNXRL_ABI_VERSION);
        return 1;
    }

    std::string options = "{\"max_episodes\": " + std::to_string(static_cast<long>(opt.threads) * opt.agents) +
                          ", \"explore\": false, \"seed\": " + std::to_string(opt.seed) + ", \"max_wait_us\": " + std::to_string(opt.max_wait_us) +
                          ", \"max_batch\": " + std::to_string(opt.max_batch);
    if (!opt.out.empty()) options += ", \"out\": " + json_string(opt.out);
    options += "}";

    onnxrl_env* env = nullptr;
    check(onnxrl_env_open(opt.model.c_str(), options.c_str(), &env), "onnxrl_env_open");
    std::int64_t obs_size = 0, action_size = 0;
    check(onnxrl_env_sizes(env, &obs_size, &action_size), "onnxrl_env_sizes");
    if (obs_size != 4 || action_size != 1) {
        std::fprintf(stderr, "cpp_sim: model %s has observation size %lld and action size %lld; CartPole needs 4 and 1\n",
                     opt.model.c_str(), static_cast<long long>(obs_size), static_cast<long long>(action_size));
        return 1;
    }

    // The episodes, divided among the threads (the first ones take the remainder).
    std::vector<ThreadResult> results(static_cast<std::size_t>(opt.threads));
    std::vector<std::thread> threads;
    const auto t0 = std::chrono::steady_clock::now();
    for (int t = 0; t < opt.threads; t++) {
        const long quota = opt.episodes / opt.threads + (t < opt.episodes % opt.threads ? 1 : 0);
        threads.emplace_back(simulate, env, t, opt.agents, quota, opt.seed, std::ref(results[static_cast<std::size_t>(t)]));
    }
    for (std::thread& th : threads) th.join();
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();

    check(onnxrl_env_close(env), "onnxrl_env_close");

    long episodes = 0, actions = 0;
    double sum = 0, min_ret = INFINITY, max_ret = -INFINITY;
    for (const ThreadResult& r : results) {
        actions += r.actions;
        for (const double ret : r.returns) {
            episodes++;
            sum += ret;
            min_ret = std::min(min_ret, ret);
            max_ret = std::max(max_ret, ret);
        }
    }
    const double mean = episodes > 0 ? sum / static_cast<double>(episodes) : 0.0;
    std::printf("mean_return=%.2f\n", mean);
    std::printf("episodes=%ld\n", episodes);
    std::printf("actions_per_sec=%.0f\n", seconds > 0 ? static_cast<double>(actions) / seconds : 0.0);
    std::printf("min_return=%.0f max_return=%.0f actions=%ld seconds=%.3f threads=%d agents=%d\n",
                episodes > 0 ? min_ret : 0.0, episodes > 0 ? max_ret : 0.0, actions, seconds, opt.threads, opt.agents);
    if (!opt.out.empty()) std::printf("out=%s\n", opt.out.c_str());

    if (opt.has_min_return && mean < opt.min_return) {
        std::fprintf(stderr, "cpp_sim: mean return %.2f is below --min-return %.2f\n", mean, opt.min_return);
        return 1;
    }
    return 0;
}
