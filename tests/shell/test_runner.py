"""The glance runner: what the Bash tool really runs, checked by running it."""

from __future__ import annotations

import os
import subprocess
import time
from pathlib import Path

import pytest

from flower.shell import GLANCE_SECONDS, OUTPUT_CAP, Refused, is_ephemeral, prepare_glance
from flower.shell import runner as runner_module
from flower.shell.bound import NOTE_CAPPED, NOTE_KILLED, unwrap, wrap

from .test_commands import GLANCES as COMMAND_GLANCES
from .test_git import GLANCES as GIT_GLANCES

PLANTED = "planted-secret-4711"


@pytest.fixture
def env(tmp_path: Path) -> dict[str, str]:
    home = tmp_path / "home"
    (home / ".config" / "flower").mkdir(parents=True)
    (home / ".config" / "flower" / ".env").write_text(f"KEY={PLANTED}\n")
    (home / ".claude").mkdir()
    (home / ".claude" / "settings.json").write_text(f'{{"x": "{PLANTED}"}}')
    return {"PATH": os.environ["PATH"], "HOME": str(home), "LANG": "C"}


@pytest.fixture
def ws(tmp_path: Path, env: dict[str, str]) -> Path:
    ws = tmp_path / "ws"
    (ws / "src" / "deep").mkdir(parents=True)
    (ws / "README.md").write_text("hello\n")
    (ws / "src" / "a.py").write_text(f"x = 1  # {PLANTED[:7]}\n")
    return ws


def run(cmd: str, cwd: Path, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    """Run ``cmd`` the way the CLI's Bash tool does: through a shell, in ``cwd``."""
    return subprocess.run(["bash", "-c", cmd], cwd=cwd, env=env, capture_output=True,
                          text=True, timeout=GLANCE_SECONDS + 10, check=False)


def glance(cmd: str, cwd: Path, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return run(prepare_glance(cmd, str(cwd), env), cwd, env)


def git(cwd: Path, *args: str) -> str:
    return subprocess.run(["git", "-c", "user.email=t@e.st", "-c", "user.name=t", *args],
                          cwd=cwd, check=True, capture_output=True, text=True).stdout


def test_the_prepared_command_is_a_glance_wrapping_the_original(ws: Path,
                                                                env: dict[str, str]) -> None:
    out = prepare_glance("cat README.md", str(ws), env)
    assert unwrap(out) == "cat README.md" and is_ephemeral(out)
    again = prepare_glance(out, str(ws), env)  # prepared from what it wraps: bounded once
    assert again == out and unwrap(unwrap(again) or "") is None
    assert glance("cat README.md", ws, env).stdout == "hello\n"


def test_exit_status_and_stderr_survive(ws: Path, env: dict[str, str]) -> None:
    res = glance("grep nomatch README.md", ws, env)
    assert res.returncode == 1 and res.stdout == ""
    res = glance("ls missing", ws, env)
    assert res.returncode == 2 and "missing" in res.stdout  # stderr folded into stdout


@pytest.mark.parametrize("make,cmd", [
    (lambda ws, home: (ws / "notes").symlink_to(home / ".config" / "flower" / ".env"),
     "cat notes"),
    (lambda ws, home: (ws / "cfg").symlink_to(home / ".config"), "grep -rn KEY cfg"),
    (lambda ws, home: (ws / "cfg").symlink_to(home / ".claude"), "head cfg/settings.json"),
    (lambda ws, home: (ws / "z").symlink_to("/dev/zero"), "cat z"),
    (lambda ws, home: (ws / "s").symlink_to("/proc/self"), "cat s/status"),
    (lambda ws, home: os.mkfifo(ws / "pipe"), "cat pipe"),
    (lambda ws, home: (ws / "h").symlink_to(home), "grep -r KEY h"),
    (lambda ws, home: (ws / "n1.md").symlink_to(home / ".config" / "flower" / ".env"),
     "cat n*.md"),
])
def test_paths_are_checked_on_the_real_file_system(ws: Path, env: dict[str, str],
                                                   make, cmd: str) -> None:
    """The text is harmless; the file system says otherwise."""
    make(ws, Path(env["HOME"]))
    assert is_ephemeral(cmd)
    with pytest.raises(Refused):
        prepare_glance(cmd, str(ws), env)


def test_relative_climbs_are_resolved_against_the_real_cwd(ws: Path,
                                                           env: dict[str, str]) -> None:
    deep = ws / "src" / "deep"
    ups = "../" * len(deep.parts)
    for cmd in (f"grep -r KEY {ups}", f"grep -r KEY {ups}tmp", f"find {ups[:-1]}",
                "grep -r KEY ../../../home"):
        with pytest.raises(Refused):
            prepare_glance(cmd, str(deep), env)
    with pytest.raises(Refused):  # the home directory itself as the working directory
        prepare_glance("grep -r KEY .", env["HOME"], env)
    assert "a.py:1:" in glance("grep -rn x ../../src", deep, env).stdout  # the workspace


def test_a_directory_diff_never_prints_a_secret(ws: Path, env: dict[str, str]) -> None:
    """``diff -N dir empty`` prints every file of ``dir``, no ``-r`` needed."""
    (ws / ".env").write_text(f"{PLANTED}\n")
    (ws / "empty").mkdir()
    out = glance("diff -N . empty", ws, env).stdout
    assert "README.md" in out and PLANTED not in out, out
    (ws / "notes").symlink_to(Path(env["HOME"]) / ".config" / "flower")
    with pytest.raises(Refused):
        prepare_glance("diff -N notes empty", str(ws), env)


def test_recursive_reads_skip_secret_names_in_the_tree(ws: Path, env: dict[str, str]) -> None:
    for rel in (".env", "src/prod.env", "src/.env.local", "key.pem", "src/id_rsa",
                ".ssh/config", ".config/x.txt", "deep/credentials.json", "my_secret.txt"):
        (ws / rel).parent.mkdir(parents=True, exist_ok=True)
        (ws / rel).write_text(f"{PLANTED}\n")
    (ws / "plain.txt").write_text(f"{PLANTED}\n")
    out = glance(f"grep -rn {PLANTED} .", ws, env).stdout
    assert "plain.txt" in out and out.count(PLANTED) == 1, out
    other = ws.parent / "other"
    other.mkdir()
    out = glance("diff -r . ../other", ws, env).stdout
    assert "plain.txt" in out and ".env" not in out and "key.pem" not in out, out


def test_a_recursive_grep_cannot_include_secrets_back(ws: Path, env: dict[str, str]) -> None:
    """grep decides --include/--exclude by the last match: the runner's come last."""
    (ws / ".env").write_text(f"{PLANTED}\n")
    (ws / "src" / "x.txt").write_text(f"{PLANTED}\n")
    for cmd in (f"grep -rn --include=.env {PLANTED} .", f"grep -rn --include='*' {PLANTED} .",
                f"grep -r -e {PLANTED} --include=.env -- ."):
        out = glance(cmd, ws, env).stdout
        assert ".env" not in out, (cmd, out)
    assert "src/x.txt" in glance(f"grep -rn --include='*.txt' {PLANTED} .", ws, env).stdout
    assert not is_ephemeral(f"grep -rn {PLANTED} . --include=.env")  # after an operand


def test_patches_never_show_a_committed_secret(tmp_path: Path, env: dict[str, str]) -> None:
    repo = tmp_path / "r"
    (repo / "deploy").mkdir(parents=True)
    git(repo, "init", "-q")
    (repo / "deploy" / "prod.env").write_text(f"KEY={PLANTED}\n")
    (repo / "id_rsa").write_text(f"{PLANTED}\n")
    (repo / "a.py").write_text("x = 1\n")
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "one")
    (repo / "deploy" / "prod.env").write_text(f"KEY={PLANTED}-2\n")
    (repo / "a.py").write_text("x = 2\n")
    for cmd in ("git show", "git show HEAD --stat", "git log -p", "git diff", "git diff HEAD",
                "git log -p -- deploy", "git show HEAD -- deploy a.py"):
        assert is_ephemeral(cmd), cmd
        res = glance(cmd, repo, env)
        assert res.returncode == 0 and PLANTED not in res.stdout, (cmd, res.stdout)
    assert "x = 2" in glance("git diff", repo, env).stdout
    assert "prod.env" in glance("git log --stat -1", repo, env).stdout  # names still listed
    # its object id is no way round: a bare id naming a blob is refused
    blob = git(repo, "rev-parse", "HEAD:deploy/prod.env").strip()
    git(repo, "tag", "t-blob", blob)
    for cmd in (f"git show {blob}", f"git show {blob[:10]}", f"git cat-file -p {blob}",
                f"git diff {blob} {blob}", "git show t-blob", f"git log -p {blob}"):
        assert is_ephemeral(cmd), cmd
        with pytest.raises(Refused, match="contents"):
            prepare_glance(cmd, str(repo), env)
    assert "one" in glance("git show HEAD --stat", repo, env).stdout
    tree = git(repo, "rev-parse", "HEAD^{tree}").strip()
    assert "deploy" in glance(f"git cat-file -p {tree}", repo, env).stdout  # names only


def _hostile_repo(repo: Path, marks: Path) -> None:
    marks.mkdir()
    repo.mkdir()
    git(repo, "init", "-q", "-b", "main")
    (repo / "a.py").write_text("x = 1\n")
    (repo / ".gitattributes").write_text("*.py filter=my\\ evil diff=evil\n")
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "one")
    (repo / "a.py").write_text("x = 2\n")
    mark = repo.parent / "mark.sh"
    mark.write_text(f"#!/bin/sh\ntouch {marks}/$1\ncat\n")
    mark.chmod(0o755)
    for k, v in {"filter.my evil.clean": f"{mark} clean", "filter.my evil.process":
                 f"{mark} process", "diff.evil.textconv": f"{mark} textconv",
                 "diff.external": f"{mark} external", "core.fsmonitor": f"{mark} fsmonitor",
                 "gpg.program": f"{mark} gpg", "log.showSignature": "true"}.items():
        git(repo, "config", k, v)


@pytest.mark.parametrize("cmd", ["git status", "git diff", "git diff --stat", "git log -p -1",
                                 "git show", "git blame a.py", "git ls-files"])
def test_git_runs_nothing_the_repository_configures(tmp_path: Path, env: dict[str, str],
                                                    cmd: str) -> None:
    repo, marks = tmp_path / "repo", tmp_path / "marks"
    _hostile_repo(repo, marks)
    os.utime(repo / "a.py", (1_500_000_000, 1_500_000_000))  # stat-dirty: must be hashed
    run(cmd, repo, env)  # as written, the repository's programs run ...
    assert list(marks.iterdir()), cmd
    for m in marks.iterdir():
        m.unlink()
    os.utime(repo / "a.py", (1_500_000_100, 1_500_000_100))
    index = (repo / ".git" / "index").read_bytes()
    res = glance(cmd, repo, env)  # ... as a glance, none of them
    assert res.returncode == 0, res.stdout
    assert not list(marks.iterdir()), (cmd, [m.name for m in marks.iterdir()])
    assert (repo / ".git" / "index").read_bytes() == index  # no optional locks: no rewrite


def test_a_partial_clone_never_fetches(tmp_path: Path, env: dict[str, str]) -> None:
    srv, marks = tmp_path / "srv", tmp_path / "marks"
    marks.mkdir()
    srv.mkdir()
    git(srv, "init", "-q", "-b", "main")
    (srv / "f.txt").write_text("content\n")
    git(srv, "add", "-A")
    git(srv, "commit", "-qm", "one")
    git(srv, "config", "uploadpack.allowFilter", "true")
    clone = tmp_path / "clone"
    git(tmp_path, "clone", "-q", "--filter=blob:none", "--no-checkout", f"file://{srv}",
        str(clone))
    pack = tmp_path / "pack.sh"
    pack.write_text(f"#!/bin/sh\ntouch {marks}/uploadpack\nexec git-upload-pack \"$@\"\n")
    pack.chmod(0o755)
    git(clone, "config", "remote.origin.uploadpack", str(pack))
    git(clone, "config", "protocol.file.allow", "always")  # beats -c protocol.allow=never
    res = glance("git show HEAD:f.txt", clone, env)
    assert not list(marks.iterdir()) and "content" not in res.stdout
    run("git show HEAD:f.txt", clone, env)  # control: as written, it fetches
    assert (marks / "uploadpack").exists()


def test_git_refuses_a_work_tree_that_holds_secrets_or_none(tmp_path: Path,
                                                            env: dict[str, str]) -> None:
    home = Path(env["HOME"])
    git(home, "init", "-q")  # a dotfiles repository in the home directory
    (home / "proj").mkdir()
    for cwd in (home, home / "proj"):
        with pytest.raises(Refused, match="work tree"):
            prepare_glance("git diff", str(cwd), env)
    bare = tmp_path / "not-a-repo"
    bare.mkdir()
    with pytest.raises(Refused, match="not inside"):
        prepare_glance("git status", str(bare), env)
    assert glance("git --version", bare, env).stdout.startswith("git version")


def test_remote_urls_lose_their_credentials(tmp_path: Path, env: dict[str, str]) -> None:
    repo = tmp_path / "r"
    repo.mkdir()
    git(repo, "init", "-q")
    git(repo, "remote", "add", "origin", f"https://u:{PLANTED}@example.invalid/r.git")
    out = glance("git remote -v", repo, env).stdout
    assert "https://***@example.invalid/r.git" in out and PLANTED not in out


def test_a_glance_that_runs_too_long_is_killed_in_the_foreground(
        ws: Path, env: dict[str, str]) -> None:
    with (ws / "huge.bin").open("wb") as fh:
        fh.truncate(1 << 40)  # sparse: wc -l reads a terabyte of zeros
    start = time.monotonic()
    res = glance("wc -l huge.bin", ws, env)
    took = time.monotonic() - start
    assert res.returncode == 137 and NOTE_KILLED in res.stdout
    assert GLANCE_SECONDS - 1 < took < GLANCE_SECONDS + 4
    alive = subprocess.run(["pgrep", "-f", str(ws / "huge.bin")], capture_output=True)
    assert alive.returncode == 1  # nothing left running
    alive = subprocess.run(["pgrep", "-fx", "wc -l huge.bin"], capture_output=True)
    assert alive.returncode == 1


def test_output_is_capped(ws: Path, env: dict[str, str]) -> None:
    (ws / "big.txt").write_text("y" * (3 * OUTPUT_CAP))
    res = glance("cat big.txt", ws, env)
    assert res.returncode == 0 and res.stdout.endswith(NOTE_CAPPED + "\n")
    assert len(res.stdout) - len(NOTE_CAPPED) - 1 == OUTPUT_CAP


def test_stdin_is_closed(ws: Path, env: dict[str, str]) -> None:
    """Even a command that would read stdin finds it at its end at once."""
    cmd = wrap("cat -")
    res = subprocess.run(["bash", "-c", cmd], cwd=ws, env=env, capture_output=True,
                         text=True, timeout=GLANCE_SECONDS + 5, input="typed\n", check=False)
    assert res.returncode == 0 and res.stdout == ""


def test_no_timeout_program_means_no_glance(ws: Path, env: dict[str, str],
                                            monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(runner_module.shutil, "which", lambda name: None)
    with pytest.raises(Refused, match="timeout"):
        prepare_glance("ls", str(ws), env)


@pytest.mark.parametrize("cmd", [
    "bash -c 'ls' glance 'ls'", "bash -c x glance ls", "bash -c 'export A=1' glance 'ls'",
    wrap("ls") + "; rm -rf x", wrap("rm -rf x"), wrap(wrap("ls")),
])
def test_only_the_exact_bounded_form_is_recognised(cmd: str) -> None:
    assert not is_ephemeral(cmd), cmd


def test_expiry_names_the_command_the_model_wrote(ws: Path, env: dict[str, str]) -> None:
    """Whichever form a transcript kept, it expires, under the model's own words."""
    from flower.stores.trim import EphemeralPolicy

    out = prepare_glance("cat README.md", str(ws), env)
    assert is_ephemeral(out)
    assert EphemeralPolicy().placeholder(out, 3).startswith("[`cat README.md` 的结果已过期")


@pytest.fixture(scope="module")
def scratch_repo(tmp_path_factory: pytest.TempPathFactory) -> Path:
    repo = tmp_path_factory.mktemp("glances")
    git(repo, "init", "-q")
    (repo / "a.py").write_text("x = 1\n")
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "one")
    return repo


@pytest.mark.parametrize("cmd", sorted(set(COMMAND_GLANCES + GIT_GLANCES)))
def test_every_glance_prepares_into_a_glance(scratch_repo: Path, cmd: str) -> None:
    """What runs is itself accepted: expiry agrees whichever form a transcript keeps."""
    out = prepare_glance(cmd, str(scratch_repo))
    assert is_ephemeral(out) and unwrap(out) is not None
