"""Credentials: .env parsing rules and search order (seed 003), masking, probe, setup file."""

from __future__ import annotations

import json
import os
import socket
import stat
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from flower import config, texts
from flower.core import env as envmod
from flower.core.env import (
    KNOWN,
    REQUIRED_ANY,
    check_credentials,
    describe,
    load_dotenv,
    mask,
    parse_dotenv,
    probe_credentials,
    redact,
    user_env_path,
    write_user_env,
)

KEY = "sk-ant-api03-SECRETSECRETSECRET-0123456789"
TOKEN = "gw-token-SECRETSECRETSECRET-abcdef"


@pytest.fixture
def sandbox(home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[dict]:
    """Scratch HOME/XDG/cwd and a fake source-repo root; os.environ restored afterwards
    (load_dotenv writes to it directly, which monkeypatch cannot undo by itself)."""
    cwd = tmp_path / "project"
    cwd.mkdir()
    monkeypatch.chdir(cwd)
    repo = tmp_path / "repo"
    repo.mkdir()
    monkeypatch.setattr(config, "source_env_path", lambda: repo / ".env")
    for proxy in ("http_proxy", "https_proxy", "HTTP_PROXY", "HTTPS_PROXY", "all_proxy",
                  "ALL_PROXY"):
        monkeypatch.delenv(proxy, raising=False)
    saved = dict(os.environ)
    paths = {
        "flower_env": tmp_path / "flower_env.env",
        "cwd": cwd / ".env",
        "user": home / ".config" / "flower" / ".env",
        "repo": repo / ".env",
        "settings": home / ".claude" / "settings.json",
        "local": home / ".claude" / "settings.local.json",
    }
    yield paths
    os.environ.clear()
    os.environ.update(saved)


def put(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


def put_settings(path: Path, env: dict) -> Path:
    return put(path, json.dumps({"env": env, "permissions": {"allow": ["Bash"]}}))


# --- parsing: one row per rule of seed 003 -------------------------------------------------

PARSE_TABLE = [
    # accepted forms
    ("KEY=VALUE", {"KEY": "VALUE"}),
    ("KEY = VALUE", {"KEY": "VALUE"}),
    ('KEY="VALUE"', {"KEY": "VALUE"}),
    ("KEY='VALUE'", {"KEY": "VALUE"}),
    ("KEY=a=b", {"KEY": "a=b"}),
    ("   KEY=v   ", {"KEY": "v"}),
    ("KEY=v\r", {"KEY": "v"}),
    ("KEY=  'a b'  ", {"KEY": "a b"}),
    ("# a comment\n\n   \nKEY=v", {"KEY": "v"}),
    ("   # indented comment=x", {}),
    ("#KEY=V", {}),
    ("no equals sign", {}),
    ("=orphan value", {}),
    # quotes are stripped from both ends, paired or not
    ('KEY="unpaired', {"KEY": "unpaired"}),
    ("KEY=unpaired'", {"KEY": "unpaired"}),
    ("KEY='\"mixed\"'", {"KEY": "mixed"}),
    ('KEY=in"side', {"KEY": 'in"side'}),
    # silently odd forms: no error, just an unexpected value
    ("export KEY=V", {"export KEY": "V"}),
    ("KEY=v # note", {"KEY": "v # note"}),
    ("KEY=$OTHER", {"KEY": "$OTHER"}),
    ("KEY=${HOME}/x", {"KEY": "${HOME}/x"}),
    ('KEY="line1\nline2"', {"KEY": "line1"}),
    # an empty value is still a value
    ("KEY=", {"KEY": ""}),
    ('KEY=""', {"KEY": ""}),
    ("KEY=''", {"KEY": ""}),
]


@pytest.mark.parametrize(("text", "expected"), PARSE_TABLE)
def test_parse_rules(text, expected):
    assert dict(parse_dotenv(text)) == expected


@pytest.mark.parametrize(("text", "expected"), PARSE_TABLE)
def test_parse_rules_through_load(sandbox, text, expected):
    for key in expected:
        os.environ.pop(key, None)
    f = put(sandbox["cwd"], text)
    assert load_dotenv(f) == expected
    for key, value in expected.items():
        assert os.environ[key] == value


def test_first_occurrence_in_a_file_wins(sandbox):
    os.environ.pop("DUP", None)
    load_dotenv(put(sandbox["cwd"], "DUP=1\nDUP=2\n"))
    assert os.environ["DUP"] == "1"


def test_unreadable_or_missing_explicit_file_is_empty(sandbox, tmp_path):
    assert load_dotenv(tmp_path / "nope.env") == {}
    assert load_dotenv(tmp_path) == {}  # a directory: OSError → nothing


def test_any_key_is_loaded_not_only_known(sandbox):
    os.environ.pop("SOMETHING_ELSE", None)
    put(sandbox["cwd"], "SOMETHING_ELSE=yes\n")
    assert load_dotenv() == {"SOMETHING_ELSE": "yes"}


# --- search order and per-key priority ------------------------------------------------------

SOURCES = ["flower_env", "cwd", "user", "repo", "settings", "local"]


def write_source(sandbox, name: str, key: str, value: str) -> None:
    if name in ("settings", "local"):
        put_settings(sandbox[name], {key: value})
    else:
        if name == "flower_env":
            os.environ["FLOWER_ENV"] = str(sandbox["flower_env"])
        put(sandbox[name], f"{key}={value}\n")


@pytest.mark.parametrize("present", [
    SOURCES, SOURCES[1:], SOURCES[2:], SOURCES[3:], SOURCES[4:], SOURCES[5:],
    ["cwd", "repo"], ["user", "local"], ["flower_env", "settings"], ["repo", "settings"],
])
def test_highest_present_source_wins(sandbox, present):
    for name in present:
        write_source(sandbox, name, "ANTHROPIC_BASE_URL", f"http://{name}")
    loaded = load_dotenv()
    assert os.environ["ANTHROPIC_BASE_URL"] == f"http://{present[0]}"
    assert loaded["ANTHROPIC_BASE_URL"] == f"http://{present[0]}"


@pytest.mark.parametrize("present", [SOURCES, SOURCES[2:], ["settings"]])
def test_process_env_always_wins(sandbox, present):
    os.environ["ANTHROPIC_BASE_URL"] = "http://process"
    for name in present:
        write_source(sandbox, name, "ANTHROPIC_BASE_URL", f"http://{name}")
    assert "ANTHROPIC_BASE_URL" not in load_dotenv()
    assert os.environ["ANTHROPIC_BASE_URL"] == "http://process"


def test_override_beats_process_env_but_file_priority_stays(sandbox):
    os.environ["ANTHROPIC_BASE_URL"] = "http://process"
    write_source(sandbox, "cwd", "ANTHROPIC_BASE_URL", "http://cwd")
    write_source(sandbox, "user", "ANTHROPIC_BASE_URL", "http://user")
    load_dotenv(override=True)
    assert os.environ["ANTHROPIC_BASE_URL"] == "http://cwd"


def test_priority_is_per_key_not_per_file(sandbox):
    put(sandbox["cwd"], "ANTHROPIC_BASE_URL=http://project-gw\n")
    put(sandbox["user"], f"ANTHROPIC_BASE_URL=http://global\nANTHROPIC_AUTH_TOKEN={TOKEN}\n")
    put(sandbox["repo"], "ANTHROPIC_MODEL=from-repo\nANTHROPIC_AUTH_TOKEN=repo-token\n")
    put_settings(sandbox["settings"], {"CLAUDE_CODE_EFFORT_LEVEL": "high",
                                       "ANTHROPIC_MODEL": "from-claude"})
    loaded = load_dotenv()
    assert os.environ["ANTHROPIC_BASE_URL"] == "http://project-gw"
    assert os.environ["ANTHROPIC_AUTH_TOKEN"] == TOKEN
    assert os.environ["ANTHROPIC_MODEL"] == "from-repo"
    assert os.environ["CLAUDE_CODE_EFFORT_LEVEL"] == "high"
    assert loaded == {"ANTHROPIC_BASE_URL": "http://project-gw", "ANTHROPIC_AUTH_TOKEN": TOKEN,
                      "ANTHROPIC_MODEL": "from-repo", "CLAUDE_CODE_EFFORT_LEVEL": "high"}


def test_empty_value_occupies_the_key(sandbox):
    put(sandbox["cwd"], "ANTHROPIC_AUTH_TOKEN=\n")
    put(sandbox["user"], f"ANTHROPIC_AUTH_TOKEN={TOKEN}\n")
    put_settings(sandbox["settings"], {"ANTHROPIC_AUTH_TOKEN": TOKEN})
    assert load_dotenv() == {"ANTHROPIC_AUTH_TOKEN": ""}
    assert os.environ["ANTHROPIC_AUTH_TOKEN"] == ""
    msg = check_credentials()
    assert msg is not None and "ANTHROPIC_AUTH_TOKEN" in msg and "空值" in msg


def test_explicit_path_reads_only_that_file(sandbox, tmp_path):
    put(sandbox["cwd"], "FROM_CWD=1\n")
    put(sandbox["user"], f"ANTHROPIC_API_KEY={KEY}\n")
    put_settings(sandbox["settings"], {"ANTHROPIC_AUTH_TOKEN": TOKEN})
    os.environ["FLOWER_ENV"] = str(put(sandbox["flower_env"], "FROM_FLOWER_ENV=1\n"))
    only = put(tmp_path / "only.env", "ONLY=1\n")
    assert load_dotenv(only) == {"ONLY": "1"}
    for key in ("FROM_CWD", "ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN", "FROM_FLOWER_ENV"):
        assert key not in os.environ


def test_flower_env_unset_or_missing_file_is_skipped(sandbox):
    os.environ["FLOWER_ENV"] = str(sandbox["flower_env"])  # does not exist
    put(sandbox["cwd"], "ANTHROPIC_MODEL=m\n")
    assert load_dotenv() == {"ANTHROPIC_MODEL": "m"}


# --- borrowing from ~/.claude ----------------------------------------------------------------

def test_settings_borrow_only_the_nine_known_keys(sandbox):
    env = {k: f"v-{k}" for k in KNOWN}
    env.update({"FOO": "bar", "CLAUDE_CODE_MAX_RETRIES": "9", "DISABLE_AUTOUPDATER": "1"})
    put_settings(sandbox["settings"], env)
    loaded = load_dotenv()
    assert set(loaded) == set(KNOWN)
    assert len(KNOWN) == 9
    for key in ("FOO", "CLAUDE_CODE_MAX_RETRIES", "DISABLE_AUTOUPDATER"):
        assert key not in os.environ


def test_settings_json_before_settings_local(sandbox):
    put_settings(sandbox["settings"], {"ANTHROPIC_MODEL": "main"})
    put_settings(sandbox["local"], {"ANTHROPIC_MODEL": "local", "ANTHROPIC_API_KEY": KEY})
    load_dotenv()
    assert os.environ["ANTHROPIC_MODEL"] == "main"
    assert os.environ["ANTHROPIC_API_KEY"] == KEY


def test_settings_empty_or_non_string_values_are_not_borrowed(sandbox):
    put_settings(sandbox["settings"], {"ANTHROPIC_API_KEY": "", "ANTHROPIC_MODEL": 3})
    put_settings(sandbox["local"], {"ANTHROPIC_API_KEY": KEY})
    load_dotenv()
    assert os.environ["ANTHROPIC_API_KEY"] == KEY
    assert "ANTHROPIC_MODEL" not in os.environ


@pytest.mark.parametrize("content", [
    "{not json", "", "[1, 2]", '{"env": ["ANTHROPIC_API_KEY"]}', '{"env": null}', "\x00\xff",
])
def test_broken_settings_are_ignored(sandbox, content):
    put(sandbox["settings"], content)
    put_settings(sandbox["local"], {"ANTHROPIC_API_KEY": KEY})
    load_dotenv()
    assert os.environ["ANTHROPIC_API_KEY"] == KEY


def test_unreadable_settings_are_ignored(sandbox):
    sandbox["settings"].mkdir(parents=True)  # a directory: OSError on read
    assert load_dotenv() == {}


# --- paths ----------------------------------------------------------------------------

def test_user_env_path_honours_xdg(home, monkeypatch, tmp_path):
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "xdg"))
    assert user_env_path() == tmp_path / "xdg" / "flower" / ".env"
    monkeypatch.setenv("XDG_CONFIG_HOME", "")
    assert user_env_path() == home / ".config" / "flower" / ".env"
    monkeypatch.delenv("XDG_CONFIG_HOME")
    assert user_env_path() == home / ".config" / "flower" / ".env"


@pytest.mark.parametrize(("marker", "found"), [(".git", True), ("pyproject.toml", True),
                                                (None, False)])
def test_source_repo_env_only_for_a_checkout(monkeypatch, tmp_path, marker, found):
    root = tmp_path / "root"
    root.mkdir()
    if marker:
        (root / marker).touch()
    monkeypatch.setattr(config, "_REPO_ROOT", root)
    assert config.source_env_path() == (root / ".env" if found else None)


def test_repo_root_is_the_folder_holding_the_package():
    assert Path(config.__file__).resolve().parent.parent == config._REPO_ROOT


# --- check_credentials -------------------------------------------------------------------

def test_check_credentials_message(sandbox):
    msg = check_credentials()
    assert msg is not None and len(msg.splitlines()) >= 4
    for must in ("ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN", "flower setup", "export",
                 str(user_env_path()), str(sandbox["cwd"]), "settings.json", "$FLOWER_ENV"):
        assert must in msg, must


@pytest.mark.parametrize("key", REQUIRED_ANY)
def test_check_credentials_ok_with_either(sandbox, key):
    os.environ[key] = "x" * 20
    assert check_credentials() is None


def test_check_credentials_empty_counts_as_missing(sandbox):
    os.environ["ANTHROPIC_API_KEY"] = ""
    msg = check_credentials()
    assert msg is not None and "ANTHROPIC_API_KEY" in msg


# --- masking ----------------------------------------------------------------------------

def test_mask_shapes():
    assert mask(KEY) == f"sk-a…(共 {len(KEY)} 位)"
    assert mask("short") == "…(共 5 位)"
    assert mask("") == "" and mask(None) == ""


@given(st.text(alphabet="abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_.",
               min_size=5, max_size=200))
def test_mask_never_contains_the_secret(secret):
    assert secret not in mask(secret)
    assert secret not in redact(f"before {secret} after {secret}", [secret])


def test_describe_masks_and_notes_default(sandbox):
    os.environ["ANTHROPIC_API_KEY"] = KEY
    os.environ["ANTHROPIC_AUTH_TOKEN"] = TOKEN
    os.environ["ANTHROPIC_MODEL"] = "claude-opus-5[1m]"
    d = describe()
    assert set(d) == set(KNOWN)
    assert KEY not in json.dumps(d, ensure_ascii=False)
    assert TOKEN not in json.dumps(d, ensure_ascii=False)
    assert d["ANTHROPIC_API_KEY"].startswith("sk-a…")
    assert d["ANTHROPIC_BASE_URL"] == "https://api.anthropic.com(默认)"
    assert d["ANTHROPIC_MODEL"] == "claude-opus-5[1m]"
    assert d["CLAUDE_CODE_SUBAGENT_MODEL"] == "(未设置)"
    os.environ["ANTHROPIC_BASE_URL"] = "http://gw:1"
    assert describe()["ANTHROPIC_BASE_URL"] == "http://gw:1"


def test_redact_uses_secret_env_vars_by_default(sandbox):
    os.environ["ANTHROPIC_API_KEY"] = KEY
    os.environ["MY_SERVICE_PASSWORD"] = "hunter2hunter2"
    os.environ["ANTHROPIC_MODEL"] = "claude-sonnet-4-5"
    line = f"calling with {KEY} and hunter2hunter2 on claude-sonnet-4-5"
    out = redact(line)
    assert KEY not in out and "hunter2hunter2" not in out
    assert "claude-sonnet-4-5" in out


# --- write_user_env ---------------------------------------------------------------------

def test_write_user_env_mode_and_round_trip(sandbox):
    path = write_user_env({"ANTHROPIC_API_KEY": KEY, "ANTHROPIC_BASE_URL": "",
                           "ANTHROPIC_MODEL": "claude-opus-5[1m]"})
    assert path == user_env_path()
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    lines = path.read_text(encoding="utf-8").splitlines()
    assert lines[0].startswith("#")
    assert lines[1:] == [f"ANTHROPIC_API_KEY={KEY}", "ANTHROPIC_MODEL=claude-opus-5[1m]"]
    os.environ["ANTHROPIC_API_KEY"] = "old"
    assert load_dotenv(path, override=True)["ANTHROPIC_API_KEY"] == KEY
    assert os.environ["ANTHROPIC_MODEL"] == "claude-opus-5[1m]"


def test_write_user_env_replaces_the_whole_file(sandbox):
    write_user_env({"ANTHROPIC_API_KEY": KEY, "ANTHROPIC_MODEL": "m"})
    path = write_user_env({"ANTHROPIC_AUTH_TOKEN": TOKEN})
    assert "ANTHROPIC_MODEL" not in path.read_text(encoding="utf-8")


def _left_over(directory: Path) -> list[str]:
    return sorted(p.name for p in directory.iterdir() if p.name != ".env")


def test_write_user_env_failure_keeps_old_file(sandbox, monkeypatch):
    path = write_user_env({"ANTHROPIC_API_KEY": KEY})
    before = path.read_bytes()

    def boom(*args, **kwargs):
        raise OSError("disk full")

    monkeypatch.setattr(envmod.os, "replace", boom)
    with pytest.raises(OSError, match="disk full"):
        write_user_env({"ANTHROPIC_API_KEY": "new-value-that-must-not-land"})
    assert path.read_bytes() == before
    assert _left_over(path.parent) == []


def test_write_user_env_rejects_newlines(sandbox):
    path = write_user_env({"ANTHROPIC_API_KEY": KEY})
    before = path.read_bytes()
    with pytest.raises(ValueError):
        write_user_env({"ANTHROPIC_API_KEY": "x\nEVIL=1"})
    with pytest.raises(ValueError):
        write_user_env({"BAD=KEY": "x"})
    assert path.read_bytes() == before
    assert _left_over(path.parent) == []


# --- probe_credentials against a real local HTTP server ------------------------------------

class FakeApi:
    """A tiny HTTP server answering every POST with a configurable status and body."""

    def __init__(self) -> None:
        self.status = 200
        self.body = b'{"type":"message","content":[{"type":"text","text":"hi"}]}'
        self.delay = 0.0
        self.requests: list[dict] = []
        api = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self):
                length = int(self.headers.get("content-length") or 0)
                api.requests.append({"path": self.path, "headers": dict(self.headers),
                                     "body": json.loads(self.rfile.read(length) or b"{}")})
                if api.delay:
                    time.sleep(api.delay)
                self.send_response(api.status)
                self.send_header("content-type", "application/json")
                self.send_header("content-length", str(len(api.body)))
                self.end_headers()
                self.wfile.write(api.body)

            def log_message(self, *args):
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        self.thread = threading.Thread(target=self.server.serve_forever, args=(0.02,),
                                       daemon=True)
        self.thread.start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def api(sandbox) -> Iterator[FakeApi]:
    server = FakeApi()
    os.environ["ANTHROPIC_BASE_URL"] = server.url
    os.environ["ANTHROPIC_API_KEY"] = KEY
    yield server
    server.close()


def error_body(kind: str, message: str) -> bytes:
    return json.dumps({"type": "error", "error": {"type": kind, "message": message}}).encode()


@pytest.mark.parametrize(("status", "body", "verdict"), [
    (200, None, "ok"),
    (401, error_body("authentication_error", "invalid x-api-key"), "auth"),
    (403, error_body("permission_error", "forbidden"), "auth"),
    (404, error_body("not_found_error", "Not Found"), "config"),
    (400, error_body("invalid_request_error", "model: claude-x does not exist"), "config"),
    (400, error_body("not_found_error", "model: claude-x"), "config"),
    (400, error_body("invalid_request_error", "max_tokens: must be positive for model"), "ok"),
    (429, error_body("rate_limit_error", "slow down"), "ok"),
    (500, error_body("api_error", "Internal server error"), "net"),
    (529, error_body("overloaded_error", "Overloaded"), "net"),
])
def test_probe_classification(api, status, body, verdict):
    api.status = status
    if body is not None:
        api.body = body
    got, detail = probe_credentials(timeout=5)
    assert got == verdict
    assert str(status) in detail
    assert KEY not in detail


def test_probe_request_shape(api):
    os.environ["ANTHROPIC_MODEL"] = "claude-opus-5[1m]"
    assert probe_credentials(timeout=5)[0] == "ok"
    [req] = api.requests
    assert req["path"] == "/v1/messages"
    headers = {k.lower(): v for k, v in req["headers"].items()}
    assert headers["x-api-key"] == KEY
    assert "authorization" not in headers
    assert headers["anthropic-version"] == "2023-06-01"
    assert req["body"]["max_tokens"] == 16
    assert req["body"]["model"] == "claude-opus-5"
    assert req["body"]["messages"] == [{"role": "user", "content": "hi"}]


def test_probe_bearer_for_gateway_token_and_base_path(api):
    del os.environ["ANTHROPIC_API_KEY"]
    os.environ["ANTHROPIC_AUTH_TOKEN"] = TOKEN
    os.environ["ANTHROPIC_BASE_URL"] = api.url + "/gateway/"
    os.environ["ANTHROPIC_DEFAULT_HAIKU_MODEL"] = "haiku-x"
    assert probe_credentials(timeout=5)[0] == "ok"
    [req] = api.requests
    headers = {k.lower(): v for k, v in req["headers"].items()}
    assert req["path"] == "/gateway/v1/messages"
    assert headers["authorization"] == f"Bearer {TOKEN}"
    assert "x-api-key" not in headers
    assert req["body"]["model"] == "haiku-x"


def test_probe_default_model(api):
    probe_credentials(timeout=5)
    assert api.requests[0]["body"]["model"] == envmod.DEFAULT_PROBE_MODEL


def test_probe_never_echoes_the_key(api):
    api.status = 401
    api.body = error_body("authentication_error", f"invalid x-api-key {KEY}")
    verdict, detail = probe_credentials(timeout=5)
    assert verdict == "auth" and KEY not in detail and "sk-a…" in detail


def test_probe_refused_loopback_is_config(sandbox):
    """Nothing listens on this machine: a wrong setting, as the Runtime judges it (it stops a
    run on the same refusal without waiting) — so the probe sends the person to the screen
    instead of saying "a network problem, running anyway" before a run that stops."""
    port = _free_port()
    os.environ["ANTHROPIC_BASE_URL"] = f"http://127.0.0.1:{port}"
    os.environ["ANTHROPIC_API_KEY"] = KEY
    verdict, detail = probe_credentials(timeout=5)
    assert verdict == "config" and KEY not in detail
    assert detail == texts.PROBE_REFUSED.format(url=f"http://127.0.0.1:{port}")


def test_probe_refused_elsewhere_is_net(sandbox, monkeypatch):
    """A refusal from another machine may be an outage: run anyway, as before."""
    import flower.core.env as envmod

    monkeypatch.setattr(envmod, "misconfigured", lambda base: None)
    os.environ["ANTHROPIC_BASE_URL"] = f"http://127.0.0.1:{_free_port()}"
    os.environ["ANTHROPIC_API_KEY"] = KEY
    assert probe_credentials(timeout=5)[0] == "net"


def test_probe_timeout_is_net(api):
    api.delay = 2.0
    t0 = time.monotonic()
    verdict, _ = probe_credentials(timeout=0.3)
    assert verdict == "net" and time.monotonic() - t0 < 2.0


def test_probe_dns_failure_is_net(sandbox):
    os.environ["ANTHROPIC_BASE_URL"] = "http://no-such-host.invalid"
    os.environ["ANTHROPIC_API_KEY"] = KEY
    assert probe_credentials(timeout=3)[0] == "net"


@pytest.mark.parametrize("url", ["ftp://example.com", "not a url", "http://", "http://h:port"])
def test_probe_bad_url_is_config(sandbox, url):
    os.environ["ANTHROPIC_BASE_URL"] = url
    os.environ["ANTHROPIC_API_KEY"] = KEY
    verdict, detail = probe_credentials(timeout=3)
    assert verdict == "config" and KEY not in detail


def test_probe_without_credentials_is_auth(sandbox):
    os.environ["ANTHROPIC_API_KEY"] = ""
    assert probe_credentials(timeout=1)[0] == "auth"


def test_importing_env_does_not_import_the_sdk():
    code = "import sys, flower.core.env; print('claude_agent_sdk' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True)
    assert out.stdout.strip() == "False"


# --- reliability fixes: no export, JSON-escaped secrets ------------------------------------

def test_load_dotenv_without_export_leaves_os_environ_alone(sandbox):
    put(sandbox["cwd"], f"ANTHROPIC_API_KEY={KEY}\nANTHROPIC_BASE_URL=http://cwd\n")
    os.environ["ANTHROPIC_BASE_URL"] = "http://process"
    before = dict(os.environ)
    loaded = load_dotenv(export=False)
    assert dict(os.environ) == before
    assert loaded == {"ANTHROPIC_API_KEY": KEY}  # the process env still wins per key
    merged = envmod.effective_env()
    assert merged["ANTHROPIC_API_KEY"] == KEY and merged["ANTHROPIC_BASE_URL"] == "http://process"
    assert dict(os.environ) == before
    assert check_credentials() is not None  # os.environ alone has no credential ...
    assert check_credentials(merged) is None  # ... the merged view does
    assert describe(merged)["ANTHROPIC_API_KEY"] == mask(KEY)


@pytest.mark.parametrize("secret", [
    'pa"ss-word-0123456789',
    "back\\slash-0123456789",
    "naïve-sécret-0123456789",
    'all"of\\them-é-0123456789',
])
def test_json_escaped_secrets_are_masked(secret):
    for ascii_only in (False, True):
        body = json.dumps([{"text": f"the value is {secret}!"}], ensure_ascii=ascii_only)
        out = redact(body, [secret])
        assert secret not in out and json.dumps(secret, ensure_ascii=ascii_only)[1:-1] not in out
        assert json.loads(out) == [{"text": f"the value is {mask(secret)}!"}]  # still JSON
    assert redact(f"raw {secret}", [secret]) == f"raw {mask(secret)}"


# --- a password inside ANTHROPIC_BASE_URL is never shown ------------------------------------

GW_PW = "gw-password-0123456789"


@pytest.mark.parametrize(("url", "shown"), [
    (f"http://flower:{GW_PW}@gw.example.com:8080/api", "http://flower:***@gw.example.com:8080/api"),
    (f"https://:{GW_PW}@gw.example.com", "https://:***@gw.example.com"),
    (f"flower:{GW_PW}@gw.example.com", "flower:***@gw.example.com"),  # typed without a scheme
    ("https://gw.example.com/v1", "https://gw.example.com/v1"),
])
def test_describe_masks_a_password_in_the_base_url(url, shown):
    assert describe({"ANTHROPIC_BASE_URL": url})["ANTHROPIC_BASE_URL"] == shown


def _free_port() -> int:
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


@pytest.mark.parametrize("where", ["refused", "bad-scheme", "bad-port"])
def test_probe_messages_mask_a_password_in_the_base_url(sandbox, where):
    """The probe's "cannot reach" / "bad gateway address" lines name the URL — the gateway's
    host, never its password."""
    url = {"refused": f"http://flower:{GW_PW}@127.0.0.1:{_free_port()}",
           "bad-scheme": f"ftp://flower:{GW_PW}@gw.example.com",
           "bad-port": f"http://flower:{GW_PW}@gw.example.com:port"}[where]
    os.environ["ANTHROPIC_BASE_URL"] = url
    os.environ["ANTHROPIC_API_KEY"] = KEY
    verdict, detail = probe_credentials(timeout=3)
    assert verdict == "config"  # a refused loopback is a wrong setting too
    assert GW_PW not in detail and "flower:***@" in detail
