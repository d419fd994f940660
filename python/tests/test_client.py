"""PolicyClient against `sample serve`: the episode methods, /v1/act, the server's errors as
PolicyServerError, keep-alive; and against small fake servers: answers that break the protocol,
and a server that closes idle connections."""

from __future__ import annotations

import http.server
import threading
from typing import Iterator

import numpy as np
import pytest

from onnxrl_sampler import Policy, PolicyClient, PolicyServerError, ProtocolError


@pytest.fixture
def server(serve):
    s = serve("--model", "cartpole_mlp", "--explore=false", "--max-episodes", "3")
    yield s
    s.stop()


def test_episode_methods(server):
    c = PolicyClient(server.url)
    assert c.health()["status"] == "ok"
    sp = c.spaces()
    assert sp["observation_space"]["type"] == "Box" and sp["action_space"]["n"] == 2
    eid = c.start_episode()
    assert len(eid) == 36
    assert c.start_episode("mine") == "mine"
    obs = np.array([0.01, 0.02, 0.03, 0.04], np.float32)
    a = c.get_action(eid, obs)
    assert isinstance(a, int) and a in (0, 1)
    assert c.get_action("mine", obs.tolist()) == a  # lists work as well as arrays
    c.log_returns(eid, 1.0, info={"note": "x"})
    c.log_action(eid, obs, 1)
    c.end_episode(eid, obs)
    c.end_episode("mine", obs, truncated=True)
    assert c.health()["active_episodes"] == 0
    c.close()


def test_act_equals_policy(lib, server):
    obs = np.random.default_rng(1).uniform(-0.4, 0.4, (32, 4)).astype(np.float32)
    with Policy("cartpole_mlp") as p:
        want = [int(a) for a in p.act(obs)]
    with PolicyClient(server.url) as c:
        assert c.act(obs) == want
        assert c.act(obs, explore=False) == want


def test_keep_alive(server):
    c = PolicyClient(server.url)
    c.health()
    sock = c._local.conn.sock
    for _ in range(5):
        c.health()
    assert c._local.conn.sock is sock  # one connection for all the requests


@pytest.mark.parametrize("call,status,code", [
    (lambda c: c.get_action("nope", [0, 0, 0, 0]), 404, "episode_not_found"),
    (lambda c: c.log_returns("nope", 1.0), 404, "episode_not_found"),
    (lambda c: c.get_action(c.start_episode(), [0, 0, 0]), 400, "bad_observation"),
    (lambda c: c.get_action(c.start_episode(), [0, 0, 9, 0]), 400, "bad_observation"),
    (lambda c: c.log_action(c.start_episode(), [0, 0, 0, 0], 3), 400, "bad_action"),
    (lambda c: [c.start_episode("x"), c.start_episode("x")], 409, "episode_exists"),
    (lambda c: [c.start_episode() for _ in range(4)], 429, "too_many_episodes"),
])
def test_server_errors(server, call, status, code):
    c = PolicyClient(server.url)
    with pytest.raises(PolicyServerError) as e:
        call(c)
    assert e.value.status == status and e.value.code == code, e.value
    assert c.health()["status"] == "ok"  # the connection and the server go on


def test_ended_episode(server):
    c = PolicyClient(server.url)
    eid = c.start_episode()
    c.get_action(eid, [0, 0, 0, 0])
    c.end_episode(eid, [0, 0, 0, 0])
    with pytest.raises(PolicyServerError) as e:
        c.get_action(eid, [0, 0, 0, 0])
    assert e.value.code == "episode_done"


def test_bad_arguments_raise_before_sending(server):
    c = PolicyClient(server.url)
    with pytest.raises(ValueError):
        c.get_action("", [0, 0, 0, 0])
    with pytest.raises(ValueError):
        c.log_returns(c.start_episode(), float("nan"))  # JSON has no NaN
    with pytest.raises(ValueError):
        PolicyClient("ftp://host:1")


class _Fake(http.server.BaseHTTPRequestHandler):
    """Answers every POST with the class's `answer` (status, body); closes or keeps the connection."""
    protocol_version = "HTTP/1.1"
    answer = (200, b"{}")
    close_after = False
    connections = 0

    def setup(self) -> None:
        type(self).connections += 1
        super().setup()

    def do_POST(self) -> None:
        self.rfile.read(int(self.headers.get("Content-Length", 0)))
        self.send_response(self.answer[0])
        self.send_header("Content-Length", str(len(self.answer[1])))
        self.send_header("Content-Type", "application/json")
        self.end_headers()
        self.wfile.write(self.answer[1])
        self.wfile.flush()
        if self.close_after:
            self.close_connection = True

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def fake() -> Iterator:
    servers = []

    def start(answer: tuple[int, bytes], close_after: bool = False) -> tuple[str, type]:
        handler = type("H", (_Fake,), {"answer": answer, "close_after": close_after, "connections": 0})
        s = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
        threading.Thread(target=s.serve_forever, daemon=True).start()
        servers.append(s)
        return f"http://127.0.0.1:{s.server_address[1]}", handler

    yield start
    for s in servers:
        s.shutdown()
        s.server_close()


@pytest.mark.parametrize("answer,match", [
    ((200, b"not json"), "not JSON"),
    ((201, b'{"id": "x"}'), "has no 'episode_id'"),
    ((200, b"[1, 2]"), "has no 'episode_id'"),
])
def test_protocol_errors(fake, answer, match):
    url, _ = fake(answer)
    with pytest.raises(ProtocolError, match=match):
        PolicyClient(url).start_episode()


def test_bad_actions_and_error_bodies(fake):
    url, _ = fake((200, b'{"action": "left"}'))
    with pytest.raises(ProtocolError, match="not a number"):
        PolicyClient(url).get_action("e", [0])
    url, _ = fake((200, b'{"action": [0.5, -1]}'))
    a = PolicyClient(url).get_action("e", [0])
    assert a.dtype == np.float32 and a.tolist() == [0.5, -1.0]
    url, _ = fake((502, b"bad gateway"))
    with pytest.raises(ProtocolError, match="not JSON"):
        PolicyClient(url).get_action("e", [0])
    url, _ = fake((503, b'{"error": "shutting down", "code": "unavailable"}'))
    with pytest.raises(PolicyServerError, match="unavailable") as e:
        PolicyClient(url).get_action("e", [0])
    assert e.value.status == 503 and e.value.message == "shutting down"


def test_reconnects_when_the_server_closed_the_connection(fake):
    url, handler = fake((201, b'{"episode_id": "e"}'), close_after=True)
    c = PolicyClient(url)
    for _ in range(3):
        assert c.start_episode() == "e"
    assert handler.connections == 3


def test_multi_agent(serve):
    srv = serve("--model", "cartpole_mlp", "--explore=false", "--multi-agent")
    c = PolicyClient(srv.url)
    eid = c.start_episode()
    obs = {"a0": np.array([0.01, 0.02, 0.03, 0.04], np.float32), "a1": [0.0, 0.0, -0.1, 0.0]}
    acts = c.get_action(eid, obs)
    assert set(acts) == {"a0", "a1"} and all(a in (0, 1) for a in acts.values())
    c.log_returns(eid, {"a0": 1.0, "a1": 0.5}, multiagent_done_dict={"a1": True})
    acts = c.get_action(eid, obs)
    assert set(acts) == {"a0"}  # a1 is done: its final observation gets no action
    with pytest.raises(ValueError):
        c.log_returns(eid, {"a0": float("inf")})  # JSON has no inf: refused before sending
    with pytest.raises(PolicyServerError) as e:
        c.get_action(eid, {"a0": [0.0, 0.0, 0.0]})
    assert e.value.code == "bad_observation"
    c.end_episode(eid, {"a0": obs["a0"]})
    srv.stop()
