#!/usr/bin/env python3
"""Train three of the bundled policies with PPO (PyTorch, CPU, one thread).

  cartpole_mlp       CartPole-v1                  feed-forward, categorical
  lstm_policy        StatelessCartPole ([x, th])  recurrent PPO (BPTT over chunks), categorical
  pendulum_gaussian  Pendulum-v1                  feed-forward, diagonal Gaussian

The networks are the classes in export_models.py, so what is trained is exactly what is exported.
The environments are small vectorised NumPy versions of gymnasium's (the Go implementations in
env/classic are the reference). For each model the trainer writes weights/<name>.pt (the
state_dict of the checkpoint with the best greedy return on a selection set of episodes) and
records a greedy evaluation over 100 other episodes in weights/eval.json. export_models.py then
loads the weights when the file exists.

Usage (Debian's python3-torch):
  nice /usr/bin/python3 models/export/train_ppo.py [name ...]   # train (default: all three)
  /usr/bin/python3 models/export/train_ppo.py --eval [name ...]  # only evaluate the saved weights
"""

import argparse
import json
import math
import os
import sys
import time

import numpy as np
import torch
import torch.nn.functional as F

HERE = os.path.dirname(os.path.abspath(__file__))
WEIGHTS_DIR = os.path.join(HERE, "weights")
sys.path.insert(0, HERE)
from export_models import CartPoleMLP, LSTMPolicy, PendulumGaussian  # noqa: E402

# Episode seeds: each evaluation episode's reset draws from np.random.default_rng(seed).
EVAL_SEEDS = list(range(0, 100))              # the reported evaluation
SELECT_SEEDS = list(range(100000, 100050))    # checkpoint selection during training

# --------------------------------------------------------------------------- environments

CP_GRAVITY, CP_MASSCART, CP_MASSPOLE, CP_LENGTH = 9.8, 1.0, 0.1, 0.5
CP_TOTAL = CP_MASSPOLE + CP_MASSCART
CP_PML = CP_MASSPOLE * CP_LENGTH
CP_FORCE, CP_TAU, CP_X_THRESH = 10.0, 0.02, 2.4
CP_TH_THRESH = 12 * 2 * math.pi / 360


class CartPoleVec:
    """n independent CartPole-v1 (stateless: observe [x, theta] only) episodes, 500-step limit."""

    obs_dim_full = 4

    def __init__(self, n, stateless=False, limit=500):
        self.n, self.stateless, self.limit = n, stateless, limit
        self.obs_dim = 2 if stateless else 4
        self.state = np.zeros((n, 4))
        self.t = np.zeros(n, dtype=np.int64)

    def reset_rows(self, rows, rngs):
        """Reset the given rows, drawing each from its own generator (rngs[i] for rows[i])."""
        for r, g in zip(rows, rngs):
            self.state[r] = g.uniform(-0.05, 0.05, 4)
            self.t[r] = 0

    def obs(self):
        s = self.state[:, [0, 2]] if self.stateless else self.state
        return s.astype(np.float32)

    def step(self, action):
        x, x_dot, th, th_dot = self.state.T
        force = np.where(action == 1, CP_FORCE, -CP_FORCE)
        cos, sin = np.cos(th), np.sin(th)
        temp = (force + CP_PML * (th_dot * th_dot) * sin) / CP_TOTAL
        thacc = (CP_GRAVITY * sin - cos * temp) / (
            CP_LENGTH * (4.0 / 3.0 - CP_MASSPOLE * (cos * cos) / CP_TOTAL))
        xacc = temp - CP_PML * thacc * cos / CP_TOTAL
        x = x + CP_TAU * x_dot
        x_dot = x_dot + CP_TAU * xacc
        th = th + CP_TAU * th_dot
        th_dot = th_dot + CP_TAU * thacc
        self.state = np.stack([x, x_dot, th, th_dot], axis=1)
        self.t += 1
        term = (x < -CP_X_THRESH) | (x > CP_X_THRESH) | (th < -CP_TH_THRESH) | (th > CP_TH_THRESH)
        trunc = ~term & (self.t >= self.limit)
        return np.ones(self.n), term, trunc


PD_MAX_SPEED, PD_DT, PD_G, PD_M, PD_L = 8.0, 0.05, 10.0, 1.0, 1.0


class PendulumVec:
    """n independent Pendulum-v1 episodes, 200-step limit. step takes the torque in [-2, 2]."""

    obs_dim = 3

    def __init__(self, n, limit=200):
        self.n, self.limit = n, limit
        self.state = np.zeros((n, 2))
        self.t = np.zeros(n, dtype=np.int64)

    def reset_rows(self, rows, rngs):
        for r, g in zip(rows, rngs):
            self.state[r, 0] = g.uniform(-math.pi, math.pi)
            self.state[r, 1] = g.uniform(-1.0, 1.0)
            self.t[r] = 0

    def obs(self):
        th, thdot = self.state.T
        return np.stack([np.cos(th), np.sin(th), thdot], axis=1).astype(np.float32)

    def step(self, torque):
        u = np.clip(torque.astype(np.float32), np.float32(-2.0), np.float32(2.0))
        th, thdot = self.state.T
        an = np.mod(th + math.pi, 2 * math.pi) - math.pi
        costs = an * an + 0.1 * (thdot * thdot) + (np.float32(0.001) * (u * u)).astype(np.float64)
        newthdot = thdot + (3 * PD_G / (2 * PD_L) * np.sin(th)
                            + (np.float32(3.0 / (PD_M * PD_L ** 2)) * u).astype(np.float64)) * PD_DT
        newthdot = np.clip(newthdot, -PD_MAX_SPEED, PD_MAX_SPEED)
        newth = th + newthdot * PD_DT
        self.state = np.stack([newth, newthdot], axis=1)
        self.t += 1
        term = np.zeros(self.n, dtype=bool)
        trunc = self.t >= self.limit
        return -costs, term, trunc


def pendulum_torque(a):
    """RLlib's normalize_actions: the policy acts in [-1, 1], the env gets low + (a+1)(high-low)/2."""
    a = np.clip(a, -1.0, 1.0)
    return (-2.0 + (a + 1.0) * 2.0).astype(np.float32)


# --------------------------------------------------------------------------- policies


class Adapter:
    """What PPO needs from a model: one step (with the recurrent state for the LSTM), the
    distribution's log-prob and entropy, and sampling / greedy actions."""

    def __init__(self, model, kind):
        self.model, self.kind = model, kind  # kind: "categorical", "gaussian"
        self.recurrent = isinstance(model, LSTMPolicy)
        self.hidden = model.lstm.hidden_size if self.recurrent else 0

    def zero_state(self, n):
        z = torch.zeros(1, n, self.hidden)
        return (z, z.clone())

    def step(self, obs, state):
        """obs [n, d] -> dist inputs [n, k], value [n], next state."""
        if self.recurrent:
            logits, value, h, c = self.model(obs, state[0], state[1])
            return logits, value, (h, c)
        out, value = self.model(obs)
        return out, value, None

    def logp_entropy(self, dist_in, act):
        if self.kind == "categorical":
            logp_all = F.log_softmax(dist_in, dim=-1)
            logp = logp_all.gather(-1, act.long().unsqueeze(-1)).squeeze(-1)
            ent = -(logp_all.exp() * logp_all).sum(-1)
            return logp, ent
        mean, log_std = dist_in[:, :1], dist_in[:, 1:]
        logp = (-0.5 * ((act - mean) / log_std.exp()) ** 2 - log_std
                - 0.5 * math.log(2 * math.pi)).sum(-1)
        ent = (0.5 + 0.5 * math.log(2 * math.pi) + log_std).sum(-1)
        return logp, ent

    def sample(self, dist_in):
        if self.kind == "categorical":
            return torch.multinomial(F.softmax(dist_in, dim=-1), 1).squeeze(-1)
        mean, log_std = dist_in[:, :1], dist_in[:, 1:]
        return mean + log_std.exp() * torch.randn_like(mean)

    def greedy(self, dist_in):
        if self.kind == "categorical":
            return dist_in.argmax(-1)
        return dist_in[:, :1]


def env_action(name, act):
    a = act.numpy()
    if name == "pendulum_gaussian":
        return pendulum_torque(a[:, 0])
    return a


# --------------------------------------------------------------------------- configs

CONFIGS = {
    "cartpole_mlp": dict(
        make=CartPoleMLP, env=lambda n: CartPoleVec(n), kind="categorical", seed=11,
        n_envs=8, n_steps=256, total_steps=300_000, lr=3e-4, gamma=0.99, lam=0.95,
        clip=0.2, epochs=10, minibatch=512, ent_coef=0.0, vf_coef=0.5, max_grad_norm=0.5,
        reward_scale=0.1, eval_every=4, seq_len=0,
    ),
    "lstm_policy": dict(
        make=LSTMPolicy, env=lambda n: CartPoleVec(n, stateless=True), kind="categorical",
        seed=13, n_envs=32, n_steps=128, total_steps=1_000_000, lr=1e-3, gamma=0.99, lam=0.95,
        clip=0.2, epochs=6, minibatch=1024, ent_coef=0.0, vf_coef=0.5, max_grad_norm=0.5,
        reward_scale=0.1, eval_every=4, seq_len=32, feature_gain=4.0,
    ),
    "pendulum_gaussian": dict(
        make=PendulumGaussian, env=lambda n: PendulumVec(n), kind="gaussian", seed=12,
        n_envs=16, n_steps=256, total_steps=1_000_000, lr=1e-3, gamma=0.95, lam=0.95,
        clip=0.2, epochs=10, minibatch=256, ent_coef=0.0, vf_coef=0.5, max_grad_norm=0.5,
        reward_scale=0.1, eval_every=4, seq_len=0,
    ),
}

HYPER_KEYS = ("n_envs", "n_steps", "total_steps", "lr", "gamma", "lam", "clip", "epochs",
              "minibatch", "ent_coef", "vf_coef", "max_grad_norm", "reward_scale", "seq_len",
              "feature_gain")


# --------------------------------------------------------------------------- evaluation


@torch.no_grad()
def evaluate(name, pol, seeds):
    """Greedy returns of one episode per seed, all run side by side, one step at a time (the
    recurrent state carried per episode, zeros at the start), as the exported model runs."""
    cfg = CONFIGS[name]
    n = len(seeds)
    env = cfg["env"](n)
    env.reset_rows(range(n), [np.random.default_rng(s) for s in seeds])
    state = pol.zero_state(n) if pol.recurrent else None
    ret = np.zeros(n)
    alive = np.ones(n, dtype=bool)
    while alive.any():
        dist_in, _, state = pol.step(torch.from_numpy(env.obs()), state)
        rew, term, trunc = env.step(env_action(name, pol.greedy(dist_in)))
        ret += np.where(alive, rew, 0.0)
        alive &= ~(term | trunc)
    return ret


# --------------------------------------------------------------------------- PPO


def train(name, log):
    cfg = CONFIGS[name]
    torch.manual_seed(cfg["seed"])
    np.random.seed(cfg["seed"])
    model = cfg["make"]()
    if "feature_gain" in cfg:  # a larger input layer so small position changes register
        with torch.no_grad():
            model.features[0].weight.mul_(cfg["feature_gain"])
    pol = Adapter(model, cfg["kind"])
    n, T = cfg["n_envs"], cfg["n_steps"]
    env = cfg["env"](n)
    seed_rng = np.random.default_rng(cfg["seed"])

    def fresh_rngs(k):
        return [np.random.default_rng(int(s)) for s in seed_rng.integers(0, 2**63 - 1, k)]

    env.reset_rows(range(n), fresh_rngs(n))
    opt = torch.optim.Adam(model.parameters(), lr=cfg["lr"], eps=1e-5)
    updates = cfg["total_steps"] // (n * T)
    gamma, lam = cfg["gamma"], cfg["lam"]
    state = pol.zero_state(n) if pol.recurrent else None

    best, best_sd, best_update = -float("inf"), None, -1
    ep_ret, ep_rets = np.zeros(n), []
    t0, c0 = time.time(), time.process_time()
    for update in range(1, updates + 1):
        frac = 1.0 - (update - 1) / updates
        for g in opt.param_groups:
            g["lr"] = cfg["lr"] * frac

        obs_b = torch.zeros(T, n, env.obs_dim)
        act_b = torch.zeros(T, n) if cfg["kind"] == "categorical" else torch.zeros(T, n, 1)
        logp_b, val_b, rew_b = torch.zeros(T, n), torch.zeros(T, n), torch.zeros(T, n)
        done_b = torch.zeros(T, n)
        if pol.recurrent:
            h_b, c_b = torch.zeros(T, n, pol.hidden), torch.zeros(T, n, pol.hidden)

        model.eval()
        with torch.no_grad():
            for t in range(T):
                obs = torch.from_numpy(env.obs())
                obs_b[t] = obs
                if pol.recurrent:
                    h_b[t], c_b[t] = state[0][0], state[1][0]
                dist_in, value, new_state = pol.step(obs, state)
                act = pol.sample(dist_in)
                logp, _ = pol.logp_entropy(dist_in, act)
                rew, term, trunc = env.step(env_action(name, act))
                ep_ret += rew
                r = torch.from_numpy(rew * cfg["reward_scale"]).float()
                if trunc.any():  # bootstrap from the final observation's value
                    idx = np.nonzero(trunc)[0]
                    fin = torch.from_numpy(env.obs()[idx])
                    st = None
                    if pol.recurrent:
                        st = (new_state[0][:, idx], new_state[1][:, idx])
                    _, v_fin, _ = pol.step(fin, st)
                    r[idx] += gamma * v_fin
                done = term | trunc
                act_b[t], logp_b[t], val_b[t], rew_b[t] = act, logp, value, r
                done_b[t] = torch.from_numpy(done.astype(np.float32))
                state = new_state
                if done.any():
                    idx = np.nonzero(done)[0]
                    ep_rets.extend(ep_ret[idx].tolist())
                    ep_ret[idx] = 0.0
                    env.reset_rows(idx, fresh_rngs(len(idx)))
                    if pol.recurrent:
                        keep = torch.from_numpy((~done).astype(np.float32)).view(1, n, 1)
                        state = (state[0] * keep, state[1] * keep)
            _, last_val, _ = pol.step(torch.from_numpy(env.obs()), state)

        # GAE(lambda); a done step does not look past itself (truncation was bootstrapped above).
        adv_b = torch.zeros(T, n)
        last = torch.zeros(n)
        for t in reversed(range(T)):
            nxt = last_val if t == T - 1 else val_b[t + 1]
            nd = 1.0 - done_b[t]
            delta = rew_b[t] + gamma * nxt * nd - val_b[t]
            last = delta + gamma * lam * nd * last
            adv_b[t] = last
        ret_b = adv_b + val_b

        model.train()
        if not pol.recurrent:
            N = T * n
            flat = lambda x: x.reshape(N, *x.shape[2:])  # noqa: E731
            b_obs, b_act, b_logp, b_adv, b_ret = map(flat, (obs_b, act_b, logp_b, adv_b, ret_b))
            for _ in range(cfg["epochs"]):
                perm = torch.randperm(N)
                for s in range(0, N, cfg["minibatch"]):
                    mb = perm[s:s + cfg["minibatch"]]
                    dist_in, value, _ = pol.step(b_obs[mb], None)
                    ppo_step(pol, opt, cfg, dist_in, value, b_act[mb], b_logp[mb], b_adv[mb], b_ret[mb])
        else:
            # Chunks of seq_len steps per env, each starting from the state stored in the rollout.
            L = cfg["seq_len"]
            K = T // L
            chunk = lambda x: x.reshape(K, L, n, *x.shape[2:]).transpose(1, 2).reshape(K * n, L, *x.shape[2:])  # noqa: E731,E501
            c_obs, c_act, c_logp, c_adv, c_ret, c_done = map(
                chunk, (obs_b, act_b, logp_b, adv_b, ret_b, done_b))
            c_h0 = h_b[::L].reshape(K * n, pol.hidden)
            c_c0 = c_b[::L].reshape(K * n, pol.hidden)
            # Step t starts a new episode when step t-1 was done: the state is zeroed before it.
            c_start = torch.zeros_like(c_done)
            c_start[:, 1:] = c_done[:, :-1]
            M = K * n
            per_mb = max(1, cfg["minibatch"] // L)
            for _ in range(cfg["epochs"]):
                perm = torch.randperm(M)
                for s in range(0, M, per_mb):
                    mb = perm[s:s + per_mb]
                    h, c = c_h0[mb].unsqueeze(0), c_c0[mb].unsqueeze(0)
                    outs, vals = [], []
                    for t in range(L):
                        keep = (1.0 - c_start[mb, t]).view(1, -1, 1)
                        dist_in, value, (h, c) = pol.step(c_obs[mb, t], (h * keep, c * keep))
                        outs.append(dist_in)
                        vals.append(value)
                    dist_in = torch.stack(outs, 1).reshape(len(mb) * L, -1)
                    value = torch.stack(vals, 1).reshape(-1)
                    f = lambda x: x[mb].reshape(len(mb) * L, *x.shape[2:])  # noqa: E731
                    ppo_step(pol, opt, cfg, dist_in, value, f(c_act), f(c_logp), f(c_adv), f(c_ret))

        if update % cfg["eval_every"] == 0 or update == updates:
            model.eval()
            sel = evaluate(name, pol, SELECT_SEEDS).mean()
            if sel >= best:
                best, best_update = sel, update
                best_sd = {k: v.detach().clone() for k, v in model.state_dict().items()}
            recent = np.mean(ep_rets[-50:]) if ep_rets else float("nan")
            log("%s update %d/%d steps %d train-return %.1f greedy-select %.1f best %.1f@%d "
                "std %.3f  %.0fs"
                % (name, update, updates, update * n * T, recent, sel, best, best_update,
                   model.log_std.exp().item() if hasattr(model, "log_std") else float("nan"),
                   time.time() - t0))
    # The value head learnt returns of scaled rewards: rescale it to the env's reward units.
    for k in ("vf.weight", "vf.bias"):
        best_sd[k] = best_sd[k] / cfg["reward_scale"]
    return best_sd, dict(best_update=best_update, updates=updates, select_mean=float(best),
                         wall_s=round(time.time() - t0, 1),
                         cpu_s=round(time.process_time() - c0, 1))


def ppo_step(pol, opt, cfg, dist_in, value, act, old_logp, adv, ret):
    logp, ent = pol.logp_entropy(dist_in, act)
    adv = (adv - adv.mean()) / (adv.std() + 1e-8)
    ratio = (logp - old_logp).exp()
    pg = -torch.min(ratio * adv, ratio.clamp(1 - cfg["clip"], 1 + cfg["clip"]) * adv).mean()
    vf = 0.5 * ((value - ret) ** 2).mean()
    loss = pg + cfg["vf_coef"] * vf - cfg["ent_coef"] * ent.mean()
    opt.zero_grad()
    loss.backward()
    torch.nn.utils.clip_grad_norm_(pol.model.parameters(), cfg["max_grad_norm"])
    opt.step()


# --------------------------------------------------------------------------- main


def load(name):
    cfg = CONFIGS[name]
    model = cfg["make"]()
    model.load_state_dict(torch.load(os.path.join(WEIGHTS_DIR, name + ".pt")))
    return Adapter(model.eval(), cfg["kind"])


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--eval", action="store_true", help="only evaluate the saved weights")
    ap.add_argument("names", nargs="*", help="models (default: all three)")
    args = ap.parse_args()
    names = args.names or list(CONFIGS)
    for nm in names:
        if nm not in CONFIGS:
            raise SystemExit("unknown model %r (want one of %s)" % (nm, ", ".join(CONFIGS)))
    torch.set_num_threads(1)
    os.makedirs(WEIGHTS_DIR, exist_ok=True)
    report_path = os.path.join(WEIGHTS_DIR, "eval.json")
    report = {}
    if os.path.exists(report_path):
        with open(report_path) as fh:
            report = json.load(fh)

    def log(msg):
        print(msg, flush=True)

    log("torch %s, numpy %s" % (torch.__version__, np.__version__))
    for nm in names:
        cfg = CONFIGS[nm]
        entry = report.get(nm, {})
        if not args.eval:
            sd, info = train(nm, log)
            torch.save(sd, os.path.join(WEIGHTS_DIR, nm + ".pt"))
            entry = {"seed": cfg["seed"],
                     "hyperparameters": {k: cfg[k] for k in HYPER_KEYS if k in cfg},
                     "training": info}
        with torch.no_grad():
            rets = evaluate(nm, load(nm), EVAL_SEEDS)
        entry["greedy_eval"] = {
            "episodes": len(EVAL_SEEDS), "seeds": "np.random.default_rng(s) per episode, s = %d..%d"
            % (EVAL_SEEDS[0], EVAL_SEEDS[-1]),
            "mean": round(float(rets.mean()), 2), "min": round(float(rets.min()), 2),
            "max": round(float(rets.max()), 2)}
        report[nm] = entry
        log("%s greedy over %d episodes: mean %.2f min %.2f max %.2f"
            % (nm, len(rets), rets.mean(), rets.min(), rets.max()))
        with open(report_path, "w") as fh:
            json.dump(report, fh, indent=1, sort_keys=True)
            fh.write("\n")


if __name__ == "__main__":
    main()
