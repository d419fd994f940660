"""PolicyClient: RLlib's PolicyClient methods against `sample serve`, over the standard
library's HTTP with keep-alive (one connection per thread), no dependency beyond NumPy."""

from __future__ import annotations

import http.client
import json
import threading
from typing import Any, Dict, Mapping, Optional, Sequence, Union
from urllib.parse import quote, urlsplit

import numpy as np

Observation = Union[np.ndarray, Sequence[float], Sequence[Any], Mapping[str, Any]]
Action = Union[int, np.ndarray, Dict[str, Any]]


class PolicyServerError(Exception):
    """An error answer of the policy server: ``{"error": message, "code": code}``.

    Attributes:
        status: the HTTP status (400, 404, 409, 429, 503, 504, ...).
        code: the server's error code (``"bad_observation"``, ``"episode_not_found"``,
            ``"episode_done"``, ``"episode_busy"``, ``"too_many_episodes"``, ``"timeout"``, ...;
            see `sample serve`'s API).
        message: the server's message.
    """

    def __init__(self, status: int, code: str, message: str) -> None:
        super().__init__(f"policy server: {status} {code}: {message}")
        self.status = status
        self.code = code
        self.message = message


class ProtocolError(Exception):
    """An answer that does not follow the protocol (not JSON, a missing member)."""


class PolicyClient:
    """A client of `sample serve` (RLlib's PolicyClient in remote inference mode).

    Args:
        url: the server's address, such as ``"http://127.0.0.1:8900"``.
        timeout: seconds a request may take (``/action`` waits for the sampler).

    One keep-alive connection per thread; safe to use from several threads. Observations are
    NumPy arrays or (nested) sequences of numbers; actions come back as an ``int`` for a
    Discrete action space and a float32 array for a Box. Against a multi-agent server
    (`sample serve --multi-agent`), observations, actions and rewards are dicts keyed by agent id.

    Example::

        client = PolicyClient("http://127.0.0.1:8900")
        eid = client.start_episode()
        action = client.get_action(eid, obs)
        client.log_returns(eid, 1.0)
        client.end_episode(eid, obs)
    """

    def __init__(self, url: str, timeout: float = 60.0) -> None:
        u = urlsplit(url)
        if u.scheme not in ("http", "") or not u.hostname:
            raise ValueError(f"PolicyClient: url {url!r}: want http://host:port")
        self.url = url
        self._host = u.hostname
        self._port = u.port or 80
        self._base = u.path.rstrip("/")
        self._timeout = timeout
        self._local = threading.local()

    # ---- RLlib's PolicyClient methods ------------------------------------------------

    def start_episode(self, episode_id: Optional[str] = None, training_enabled: bool = True) -> str:
        """Starts an episode; returns its id (the server's UUID when none is given)."""
        body: dict[str, Any] = {"training_enabled": training_enabled}
        if episode_id is not None:
            body["episode_id"] = episode_id
        res = self._request("POST", "/v1/episodes", body)
        return _member(res, "episode_id")

    def get_action(self, episode_id: str, observation: Observation) -> Action:
        """Reports an observation and waits for the action."""
        res = self._request("POST", self._episode(episode_id, "action"), {"observation": _jsonable(observation)})
        return _action(_member(res, "action"))

    def log_action(self, episode_id: str, observation: Observation, action: Action) -> None:
        """Reports an observation with the action the simulator took itself."""
        self._request("POST", self._episode(episode_id, "log_action"),
                      {"observation": _jsonable(observation), "action": _jsonable(action)})

    def log_returns(self, episode_id: str, reward: Union[float, Mapping[str, float]],
                    info: Optional[dict[str, Any]] = None,
                    multiagent_done_dict: Optional[Mapping[str, bool]] = None) -> None:
        """Adds reward to the episode's current step (summed until its next observation).

        Multi-agent: ``reward`` is a dict keyed by agent id, ``multiagent_done_dict`` marks the
        agents that are done and ``info`` holds one dict per agent (RLlib's arguments).
        """
        body: dict[str, Any] = {"reward": _jsonable(reward) if isinstance(reward, Mapping) else float(reward)}
        if info is not None:
            body["info"] = info
        if multiagent_done_dict is not None:
            body["done"] = {k: bool(v) for k, v in multiagent_done_dict.items()}
        self._request("POST", self._episode(episode_id, "returns"), body)

    def end_episode(self, episode_id: str, observation: Observation, truncated: bool = False) -> None:
        """Ends the episode with its final observation (``truncated``: cut short, bootstrapped)."""
        body: dict[str, Any] = {"observation": _jsonable(observation)}
        if truncated:
            body["truncated"] = True
        self._request("POST", self._episode(episode_id, "end"), body)

    # ---- The server's other endpoints ------------------------------------------------

    def act(self, observations: Observation, explore: Optional[bool] = None) -> list[Action]:
        """Stateless batched inference (``/v1/act``): one action per observation, nothing recorded."""
        body: dict[str, Any] = {"observations": _jsonable(observations)}
        if explore is not None:
            body["explore"] = explore
        res = self._request("POST", "/v1/act", body)
        acts = _member(res, "actions")
        if not isinstance(acts, list):
            raise ProtocolError(f"policy server: \"actions\" is {type(acts).__name__}, want a list")
        return [_action(a) for a in acts]

    def spaces(self) -> dict[str, Any]:
        """The server's spaces: ``{"observation_space": ..., "action_space": ..., ...}``."""
        return self._request("GET", "/v1/spaces", None)

    def health(self) -> dict[str, Any]:
        """``/healthz``: ``{"status": "ok", "active_episodes": N}``."""
        return self._request("GET", "/healthz", None)

    def close(self) -> None:
        """Closes this thread's connection (others close when their threads end)."""
        conn = getattr(self._local, "conn", None)
        if conn is not None:
            conn.close()
            self._local.conn = None

    def __enter__(self) -> PolicyClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # ---- HTTP ------------------------------------------------------------------------

    def _episode(self, episode_id: str, what: str) -> str:
        if not isinstance(episode_id, str) or not episode_id:
            raise ValueError(f"episode_id: want a non-empty str, got {episode_id!r}")
        return f"/v1/episodes/{quote(episode_id, safe='')}/{what}"

    def _request(self, method: str, path: str, body: Optional[dict[str, Any]]) -> Any:
        data = None if body is None else json.dumps(body, allow_nan=False).encode()
        headers = {"Content-Type": "application/json"} if data is not None else {}
        conn = getattr(self._local, "conn", None)
        reused = conn is not None
        if conn is None:
            conn = self._local.conn = http.client.HTTPConnection(self._host, self._port, timeout=self._timeout)
        try:
            conn.request(method, self._base + path, body=data, headers=headers)
            resp = conn.getresponse()
        except (http.client.RemoteDisconnected, BrokenPipeError, ConnectionResetError):
            conn.close()
            if not reused:
                raise
            # The server closed the idle keep-alive connection before it read this request:
            # send it again once on a new connection.
            conn = self._local.conn = http.client.HTTPConnection(self._host, self._port, timeout=self._timeout)
            conn.request(method, self._base + path, body=data, headers=headers)
            resp = conn.getresponse()
        except BaseException:
            conn.close()
            self._local.conn = None
            raise
        raw = resp.read()
        if resp.status == 204:
            return None
        try:
            res = json.loads(raw) if raw else None
        except ValueError:
            raise ProtocolError(f"policy server: {method} {path}: {resp.status} answer is not JSON: {raw[:200]!r}") from None
        if resp.status >= 400:
            if not isinstance(res, dict):
                raise PolicyServerError(resp.status, "", raw[:200].decode("utf-8", "replace"))
            raise PolicyServerError(resp.status, str(res.get("code", "")), str(res.get("error", "")))
        return res


def _member(res: Any, name: str) -> Any:
    if not isinstance(res, dict) or name not in res:
        raise ProtocolError(f"policy server: answer {str(res)[:200]} has no {name!r}")
    return res[name]


def _action(a: Any) -> Action:
    if isinstance(a, bool):
        raise ProtocolError(f"policy server: action {a!r} is not a number")
    if isinstance(a, int):
        return a
    if isinstance(a, dict):
        return {k: _action(v) for k, v in a.items()}
    try:
        return np.asarray(a, dtype=np.float32)
    except (TypeError, ValueError):
        raise ProtocolError(f"policy server: action {str(a)[:200]} is not a number or an array of numbers") from None


def _jsonable(x: Any) -> Any:
    if isinstance(x, np.ndarray):
        return x.tolist()
    if isinstance(x, np.generic):
        return x.item()
    if isinstance(x, (list, tuple)):
        return [_jsonable(v) for v in x]
    if isinstance(x, Mapping):
        return {str(k): _jsonable(v) for k, v in x.items()}
    return x
