"""docker/flowerbox for real, as a user runs it: the demo, a default job against the fake API on
the host, credentials passed by name only, and the roles' sandbox inside the container.

The container reaches the host's fake server (listening on 127.0.0.1) through
``FLOWERBOX_NETWORK=host``: the container shares the host's network, so the loopback address
means the same machine on both sides and the fake need not listen anywhere else.
"""

from __future__ import annotations

import json
import re
import ssl
import subprocess
import threading
import uuid
from pathlib import Path
from typing import Any

import pytest

from flower import texts
from flower.cli.commands.demo import ASK, DemoBrain
from flower.testing import FakeServer, reply, tool_use

from .conftest import IMAGE, Person, docker

pytestmark = pytest.mark.docker

#: Bounded like flower.testing's offline env (CLAUDE_CODE_* reach the box; see flowerbox).
QUICK = {"CLAUDE_CODE_MAX_RETRIES": "0", "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
         "FLOWERBOX_NETWORK": "host"}


def _files(root: Path) -> list[Path]:
    return [root, *root.rglob("*")]


def _steps(ws: Path) -> list[str]:
    return [r["step"] for r in json.loads((ws / "runs" / "manifest.json").read_text())]


def test_demo_owned_by_the_user_and_wakes_again(person: Person, scratch: Path) -> None:
    first = person.run(["demo"], scratch, FLOWER_DEMO_PAUSE="0")
    assert first.returncode == 0, first.stdout[-3000:] + first.stderr[-2000:]
    demo = scratch / "flower-demo"
    assert texts.DEMO_AGAIN.split("{ws}")[0] in first.stdout and (demo / "runs").is_dir()
    strangers = [p for p in _files(scratch) if p.lstat().st_uid != person.uid]
    assert strangers == [], f"not owned by {person.name}: {strangers[:5]}"

    again = person.run(["demo"], scratch, FLOWER_DEMO_PAUSE="0")
    assert again.returncode == 0, again.stdout[-3000:] + again.stderr[-2000:]
    assert "第 2 次唤醒" in again.stdout


def _gated(brain: DemoBrain, started: threading.Event, release: threading.Event) -> Any:
    """The demo's model, holding its first answer until the test has looked at the running
    container (the container exists only while a request is open: flowerbox runs --rm)."""
    def step(req: Any) -> Any:
        started.set()
        release.wait(120)
        return brain(req)
    return step


def test_default_job_on_the_host_fake_with_credentials_by_name(
        person: Person, scratch: Path, global_env: Path) -> None:
    marker = f"sk-ant-flowerbox-marker-{uuid.uuid4().hex}"
    global_env.write_text(f"ANTHROPIC_API_KEY={marker}\n")
    person.own(global_env)
    started, release = threading.Event(), threading.Event()
    with FakeServer() as fake:
        fake.fallback(_gated(DemoBrain(scratch, pause=0.0), started, release))
        env = {**QUICK, "ANTHROPIC_API_KEY": marker, "ANTHROPIC_BASE_URL": fake.url}
        proc = subprocess.Popen(person.popen_args(["--timeout", "0", ASK], env), cwd=scratch,
                                stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                stderr=subprocess.STDOUT, text=True)
        try:
            assert started.wait(180), "the container never reached the fake on the host"
            ids = docker("ps", "-q", "--filter", f"ancestor={IMAGE}").stdout.split()
            seen = docker("inspect", *ids).stdout if ids else ""
            assert str(scratch) in seen and "/run/flower/exported.env" in seen  # this run's
            assert marker not in seen  # the value is in no part of the container's config
        finally:
            release.set()
            out, _ = proc.communicate(timeout=600)
        assert proc.returncode == 0, out[-4000:]
        keys = {r.headers.get("x-api-key") for r in fake.requests if r.is_message}
    assert keys == {marker}  # it authenticated with the key, which never left the env/file
    assert re.search(r"== 干活 =+  3/3", out)
    assert _steps(scratch) == ["确认需求", "设定目标", "干活", "干活·判定#1", "干活#round2",
                               "干活·判定#2", "收尾交接"]
    assert marker not in out
    manifest = json.loads((scratch / "runs" / "manifest.json").read_text())
    assert manifest[0]["sandbox"] == "readonly"  # auto found bwrap working: the clarifier walled
    for what in (docker("history", "--no-trunc", IMAGE), docker("inspect", IMAGE)):
        assert what.returncode == 0 and marker not in what.stdout


def test_sandbox_on_inside_the_box_or_its_one_line(person: Person, scratch: Path) -> None:
    """``--sandbox strict`` walls a plain agent's Bash to the workspace inside the container
    (bubblewrap in the image, flowerbox's seccomp profile, the CLI's nested setting); with
    Docker's default seccomp filter ``--sandbox on`` stops with the sandbox's one line."""
    escape = "touch /home/flower/escaped && echo ESCAPED || echo REFUSED"
    with FakeServer() as fake:
        fake.script(reply(tool_use("Bash", {"command": f"touch {scratch}/inside; {escape}"})),
                    "好了")
        env = {**QUICK, "ANTHROPIC_API_KEY": "sk-test-box", "ANTHROPIC_BASE_URL": fake.url,
               "FLOWER_NO_PROBE": "1"}
        out = person.run(["--sandbox", "strict", "once", "-t", "Bash", "跑一下"], scratch, **env)
        assert out.returncode == 0, out.stdout[-3000:] + out.stderr[-2000:]
        results = [r.last_tool_results() for r in fake.requests if r.is_message]
        told = json.dumps(results, ensure_ascii=False)
    assert (scratch / "inside").exists()  # the workspace is writable
    assert "REFUSED" in told and "ESCAPED" not in told  # HOME is not

    with FakeServer() as fake:
        env = {**env, "ANTHROPIC_BASE_URL": fake.url, "FLOWERBOX_SECCOMP": "default"}
        out = person.run(["--sandbox", "on", "--timeout", "0", ASK], scratch, **env)
        assert out.returncode != 0
        said = (out.stdout + out.stderr).strip().splitlines()
        refusal = texts.SANDBOX_UNAVAILABLE.split("{why}")[0].format(mode="on")
        assert [line for line in said if refusal in line], said[-10:]
        assert not [r for r in fake.requests if r.is_message]  # stopped before any turn



def _proxy_ca(d: Path) -> tuple[Path, ssl.SSLContext]:
    """A CA made here (so in no image) and a server context for 127.0.0.1 signed by it."""
    def openssl(*args: str) -> None:
        subprocess.run(["openssl", *args], cwd=d, check=True, capture_output=True)
    openssl("req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", "ca.key", "-out",
            "ca.crt", "-days", "2", "-subj", "/CN=flowerbox test proxy CA")
    openssl("req", "-newkey", "rsa:2048", "-nodes", "-keyout", "gw.key", "-out", "gw.csr",
            "-subj", "/CN=127.0.0.1")
    (d / "ext.cnf").write_text("subjectAltName=IP:127.0.0.1\n")
    openssl("x509", "-req", "-in", "gw.csr", "-CA", "ca.crt", "-CAkey", "ca.key",
            "-CAcreateserial", "-out", "gw.crt", "-days", "2", "-extfile", "ext.cnf")
    tls = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    tls.load_cert_chain(d / "gw.crt", d / "gw.key")
    return d / "ca.crt", tls


def test_run_time_ca_reaches_the_cli_behind_a_proxy(person: Person, scratch: Path,
                                                    tmp_path: Path) -> None:
    """A gateway whose certificate is signed by a CA the image has never seen: the bundled CLI
    reaches it once flowerbox mounts FLOWER_CA_CERTS (NODE_EXTRA_CA_CERTS at the merged
    bundle)."""
    ca, tls = _proxy_ca(tmp_path)
    shared = scratch.parent / f"{scratch.name}-ca.crt"  # root's tmp_path is closed to the user
    shared.write_bytes(ca.read_bytes())
    try:
        with FakeServer() as fake:
            httpd = fake._httpd  # the fake speaks plain HTTP: put TLS on its listening socket
            assert httpd is not None
            httpd.socket = tls.wrap_socket(httpd.socket, server_side=True)
            fake.script("隔着代理也听见了")
            env = {**QUICK, "ANTHROPIC_API_KEY": "sk-test-box", "FLOWER_NO_PROBE": "1",
                   "ANTHROPIC_BASE_URL": f"https://127.0.0.1:{fake.port}",
                   "FLOWER_CA_CERTS": str(shared)}
            out = person.run(["once", "说一声"], scratch, **env)
            assert out.returncode == 0, out.stdout[-3000:] + out.stderr[-2000:]
            assert "隔着代理也听见了" in out.stdout
            assert [r for r in fake.requests if r.is_message]
    finally:
        shared.unlink()
