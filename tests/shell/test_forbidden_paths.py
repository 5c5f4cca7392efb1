"""Secret, kernel and device paths — by any spelling, behind any glob, after any ``..``."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from flower.shell.forbidden_paths import kernel_path, normalise, secret_name, secret_path, wide_root


@pytest.mark.parametrize("path,want", [
    ("//proc", ("/", ["proc"])), ("/./proc/", ("/", ["proc"])),
    ("/proc/../proc/self", ("/", ["proc", "self"])), ("/..", ("/", [])),
    ("/proc/self/../self/environ", ("/", ["proc", "self", "environ"])),
    ("a/../../b", ("", ["..", "b"])), ("~/x/../.ssh", ("~", [".ssh"])),
    ("~/../../proc", ("?", ["..", "proc"])), ("~user/.env", ("~", [".env"])),
])
def test_normalise_folds_like_the_kernel(path: str, want: tuple[str, list[str]]) -> None:
    assert normalise(path) == want


KERNEL = ["/proc/self/environ", "//proc/1/environ", "/./proc/self/cmdline",
          "/proc/../proc/self/environ", "/proc/self/../self/", "/sys/kernel", "/dev/zero",
          "//dev/zero", "/dev/./urandom", "/dev/stdin", "/dev/fd/0", "/dev/null",
          "../../proc/self/environ", "../../../dev/zero", "~/../../proc/self", "/p*/self",
          "/d?v/zero", "/[ps]ys/x"]


@pytest.mark.parametrize("path", KERNEL)
def test_kernel_and_device_paths_by_any_spelling(path: str) -> None:
    assert kernel_path(path) and secret_path(path)


@pytest.mark.parametrize("path", ["proc/x", "src/dev/a.py", "./sys.txt", "docs/proc.md",
                                  "/usr/share/dev"])
def test_names_that_only_look_like_kernel_paths_are_fine(path: str) -> None:
    assert not kernel_path(path)


SECRET = [".env", "a/b/.env", "prod.env", ".env.local", ".envrc", "key.pem", "x/server.key",
          "id_rsa", "id_ed25519.pub", "~/.ssh/config", "~/.aws/credentials", ".netrc",
          "~/.config/flower/.env", "~/.config/gh/hosts.yml", "~/.claude/settings.json",
          "~/.claude.json", "~/.docker/config.json", "~/.kube/config", "~/.gitconfig",
          ".git-credentials", "~/.bashrc", "~/.bash_profile", "~/.profile", "~/.zshrc",
          "~/.zprofile", ".git/config", "/etc/shadow", "/run/secrets/db",
          "/var/run/secrets/kubernetes.io/serviceaccount/token", "credentials.json",
          "a/../.env", "src/../../x/.ssh/id_rsa", ".ENV", "Key.PEM",
          # globs in any component
          "~/.c*/setting?.json", "~/.c*/flower/.e*", "*/.env", ".e*", "~/.ss*/id*", "*.pem",
          "~/.cl*/*.json", "*", "./*", "src/*", "x/.[e]nv", "~/.con*/*/.env", "*.env",
          "id_*", "*/*/config"]


@pytest.mark.parametrize("path", SECRET)
def test_credential_paths_are_refused(path: str) -> None:
    assert secret_path(path), path


@pytest.mark.parametrize("path", ["README.md", "src/a.py", "*.py", "docs/*.md", "a.log",
                                  "?env", "[.]env", "*env.md",
                                  "/etc/passwd", "/etc/hostname", "notes/env.md",
                                  "src/test_*.py", "environment.yml"])
def test_ordinary_files_are_not(path: str) -> None:
    assert not secret_path(path), path


# shaped like a secret: sound for globs too (any glob that could match one refuses)
_NAMES = [".env", "x.env", ".env.prod", "id_rsa", "id_ed25519", "id_x.pub", "a.pem",
          "b.key", ".netrc", ".bashrc", ".zshrc", ".git-credentials", ".claude.json",
          ".gitconfig", "shadow", "kubeconfig"]
# secret by what the name says: a glob counts when it still spells the word
_WORDS = ["credentials", "my_secret.txt", "token", "api-token.json", "password.txt",
          "id_foo"]
_DIRS = ["", "a/", "a/b/", "/", "~/", "/home/u/", "../", "./", "x/../"]


@settings(max_examples=500, deadline=None)
@given(st.sampled_from(_DIRS), st.sampled_from(_NAMES), st.booleans(), st.data())
def test_secret_names_anywhere_in_any_case_and_behind_any_glob(prefix: str, name: str,
                                                              upper: bool,
                                                              data: st.DataObject) -> None:
    spelled = name.upper() if upper else name
    assert secret_path(prefix + spelled)
    # replace one character by ? or [..], or cut the tail into a *: the glob may match it
    # (but not a leading dot: bash never expands ?env to .env)
    i = data.draw(st.integers(1 if name.startswith(".") else 0, len(name) - 1))
    assert secret_path(prefix + name[:i] + "?" + name[i + 1:]), name
    assert secret_path(prefix + name[:i] + f"[x{name[i]}]" + name[i + 1:]), name
    assert secret_path(prefix + name[:i + 1] + "*"), name
    assert secret_name(name)


@settings(max_examples=200, deadline=None)
@given(st.sampled_from(_DIRS), st.sampled_from(_WORDS), st.booleans())
def test_secret_words_anywhere_and_in_globs_that_spell_them(prefix: str, name: str,
                                                            upper: bool) -> None:
    assert secret_path(prefix + (name.upper() if upper else name))
    stem = name.split(".")[0]
    assert secret_path(prefix + stem + ".*") and secret_path(prefix + "*" + stem + "*")


@pytest.mark.parametrize("path", ["/", "//", "/.", "~", "~/", "~/.", "/home", "/home/u",
                                  "/home/u/", "/Users/me", "/root", "/etc", "/var",
                                  "/var/run", "/run", "/tmp", "..", "../..", "src/../..",
                                  "~/.config", "~/.claude", "~/.ssh", "/proc/self/../self/",
                                  "/h*", "~/.c*", "/proc"])
def test_trees_that_hold_secrets_are_not_swept(path: str) -> None:
    assert wide_root(path), path


@pytest.mark.parametrize("path", [".", "src", "./src", "docs/api", "/usr/share/doc",
                                  "/home/u/proj", "../sibling"])
def test_project_trees_may_be_swept(path: str) -> None:
    assert not wide_root(path), path
