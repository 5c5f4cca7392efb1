#!/usr/bin/env bash
# install.sh — install flower into its own virtual environment and put `flower` on PATH.
#
#   bash install.sh                 # from a checkout: installs that checkout
#   bash install.sh --source SPEC   # anything pip accepts: a path, a wheel, git+https://…
#   FLOWER_SOURCE=SPEC bash install.sh
#   bash install.sh --uninstall     # remove what this script installed
#
# With pipx on PATH: `pipx install --force SPEC`. Otherwise a venv in
# ~/.local/share/flower/venv and a symlink ~/.local/bin/flower -> the venv's flower.
# Running it again reinstalls (that is how you upgrade). It never touches credentials:
# the first `flower` run asks for them (or `flower setup`).
#
# Knobs (all optional):
#   FLOWER_SOURCE      what to install when not run from a checkout
#   FLOWER_PYTHON      the interpreter to build the venv with (default: first python3.x >= 3.10)
#   FLOWER_PIP_ARGS    extra arguments for pip install (e.g. "--no-index --find-links DIR")
#   FLOWER_VENV_ARGS   extra arguments for python -m venv (e.g. "--system-site-packages")
#   FLOWER_NO_PIPX=1   use the venv path even when pipx is present
#   FLOWER_PREFIX      where the venv goes (default ~/.local/share/flower)
#   FLOWER_BIN_DIR     where the symlink goes (default ~/.local/bin)
#   FLOWER_NO_UPDATE=1 do not ask a git source for the commit being installed
#
# It leaves $FLOWER_PREFIX/install.json: the source, the method (venv or pipx) and the
# commit or version installed, so `flower update` can upgrade the same way later.
set -euo pipefail

PREFIX="${FLOWER_PREFIX:-$HOME/.local/share/flower}"
VENV="$PREFIX/venv"
BIN_DIR="${FLOWER_BIN_DIR:-$HOME/.local/bin}"
LINK="$BIN_DIR/flower"
SOURCE="${FLOWER_SOURCE:-}"
PY="${FLOWER_PYTHON:-}"
ACTION=install
METHOD=""

if [ -t 1 ]; then
    BOLD=$'\033[1m'; RED=$'\033[31m'; RESET=$'\033[0m'
else
    BOLD=""; RED=""; RESET=""
fi

say() { printf '%s\n' "$*"; }
step() { printf '%s== %s%s\n' "$BOLD" "$*" "$RESET"; }
die() { printf '%s! %s%s\n' "$RED" "$*" "$RESET" >&2; exit 1; }

usage() {
    sed -n '2,25p' "${BASH_SOURCE[0]:-$0}" 2>/dev/null | sed 's/^# \{0,1\}//' || true
}

while [ $# -gt 0 ]; do
    case "$1" in
        --uninstall) ACTION=uninstall ;;
        --source) [ $# -ge 2 ] || die "--source needs a value"; SOURCE="$2"; shift ;;
        --source=*) SOURCE="${1#--source=}" ;;
        -h|--help) usage; exit 0 ;;
        *) die "unknown argument: $1 (see --help)" ;;
    esac
    shift
done

# Word-split the knobs into arrays without globbing (empty knob -> empty array).
PIP_ARGS=()
VENV_ARGS=()
if [ -n "${FLOWER_PIP_ARGS:-}" ]; then
    read -r -a PIP_ARGS <<<"$FLOWER_PIP_ARGS"
fi
if [ -n "${FLOWER_VENV_ARGS:-}" ]; then
    read -r -a VENV_ARGS <<<"$FLOWER_VENV_ARGS"
fi

# Behind a TLS-intercepting proxy: the CA bundle REQUESTS_CA_BUNDLE, else SSL_CERT_FILE, names
# (the same choice flower setup's probe makes) goes to pip and git, unless PIP_CERT or
# GIT_SSL_CAINFO already say otherwise; pip's own store would not know the proxy's CA.
CA_BUNDLE="${REQUESTS_CA_BUNDLE:-${SSL_CERT_FILE:-}}"
if [ -n "$CA_BUNDLE" ] && [ "$ACTION" = install ]; then
    [ -f "$CA_BUNDLE" ] || die "CA bundle $CA_BUNDLE (REQUESTS_CA_BUNDLE / SSL_CERT_FILE) does not exist"
    export PIP_CERT="${PIP_CERT:-$CA_BUNDLE}" GIT_SSL_CAINFO="${GIT_SSL_CAINFO:-$CA_BUNDLE}"
fi

use_pipx() {
    [ -z "${FLOWER_NO_PIPX:-}" ] && command -v pipx >/dev/null 2>&1
}

# The checkout this script sits in, if any (not when piped: curl … | bash).
checkout_dir() {
    local src="${BASH_SOURCE[0]:-}"
    [ -n "$src" ] && [ -f "$src" ] || return 1
    local dir
    dir="$(cd "$(dirname "$src")" && pwd)"
    [ -f "$dir/pyproject.toml" ] && [ -f "$dir/flower/__init__.py" ] || return 1
    grep -q '^name = "flower"' "$dir/pyproject.toml" || return 1
    printf '%s\n' "$dir"
}

find_python() {
    local cand
    for cand in "$PY" python3 python3.13 python3.12 python3.11 python3.10 python; do
        [ -n "$cand" ] || continue
        command -v "$cand" >/dev/null 2>&1 || continue
        if "$cand" -c 'import sys; sys.exit(0 if sys.version_info >= (3, 10) else 1)' \
            >/dev/null 2>&1; then
            command -v "$cand"
            return 0
        fi
    done
    return 1
}

ours() {  # is $LINK a symlink into our venv?
    [ -L "$LINK" ] && [ "$(readlink "$LINK")" = "$VENV/bin/flower" ]
}

uninstall() {
    local did=0
    if command -v pipx >/dev/null 2>&1 && pipx list --short 2>/dev/null | grep -q '^flower '; then
        step "pipx uninstall flower"
        pipx uninstall flower
        did=1
    fi
    if ours; then
        rm -f "$LINK"
        say "removed $LINK"
        did=1
    elif [ -e "$LINK" ] || [ -L "$LINK" ]; then
        say "left $LINK alone: not installed by this script"
    fi
    if [ -d "$VENV" ]; then
        rm -rf "$VENV"
        say "removed $VENV"
        did=1
    fi
    rm -f "$PREFIX/install.json"
    rmdir "$PREFIX" 2>/dev/null || true
    if [ "$did" = 1 ]; then
        step "flower uninstalled (credentials in ~/.config/flower and runs/ folders are kept)"
    else
        say "nothing to uninstall"
    fi
}

install_venv() {
    local python
    python="$(find_python)" || die "need Python 3.10+ (set FLOWER_PYTHON=/path/to/python3)"
    if [ -x "$VENV/bin/python" ] && "$VENV/bin/python" -c 'import sys' >/dev/null 2>&1; then
        step "reusing $VENV"
    else
        rm -rf "$VENV"
        step "creating $VENV ($("$python" --version 2>&1))"
        mkdir -p "$PREFIX"
        "$python" -m venv ${VENV_ARGS[@]+"${VENV_ARGS[@]}"} "$VENV"
    fi
    step "pip install $SOURCE"
    "$VENV/bin/python" -m pip install --quiet --disable-pip-version-check --upgrade \
        ${PIP_ARGS[@]+"${PIP_ARGS[@]}"} "$SOURCE"
    [ -x "$VENV/bin/flower" ] || die "the install did not produce $VENV/bin/flower"
    mkdir -p "$BIN_DIR"
    if [ -e "$LINK" ] && ! ours; then
        die "$LINK exists and is not ours; remove it first (or set FLOWER_BIN_DIR)"
    fi
    ln -sfn "$VENV/bin/flower" "$LINK"
    METHOD="venv"
}

install_pipx() {
    step "pipx install --force $SOURCE"
    if [ ${#PIP_ARGS[@]} -gt 0 ]; then
        pipx install --force --pip-args "${PIP_ARGS[*]}" "$SOURCE"
    else
        pipx install --force "$SOURCE"
    fi
    METHOD="pipx"
}

# The commit being installed, when the source can say: a git URL (pip's git+URL[@ref]) is
# asked with ls-remote, a local checkout with rev-parse. Empty when it cannot tell.
installed_sha() {
    command -v git >/dev/null 2>&1 || return 0
    case "$SOURCE" in
        git+*)
            [ -z "${FLOWER_NO_UPDATE:-}" ] || return 0
            local url ref out
            url="${SOURCE#git+}"
            url="${url%%#*}"
            ref="HEAD"
            if [ "${url##*@}" != "$url" ] && [[ "${url##*@}" != */* ]]; then
                ref="${url##*@}"
                url="${url%@*}"
            fi
            out="$(GIT_TERMINAL_PROMPT=0 git ls-remote "$url" "$ref" </dev/null 2>/dev/null)" \
                || return 0
            printf '%s\n' "${out%%[[:space:]]*}"
            ;;
        *)
            if [ -e "$SOURCE/.git" ]; then
                git -C "$SOURCE" rev-parse HEAD 2>/dev/null </dev/null || true
            fi
            ;;
    esac
}

# install.json beside the venv: what `flower update` reads to upgrade the same way.
write_record() {
    local py record="$PREFIX/install.json" source="$SOURCE"
    if [ -d "$SOURCE" ]; then
        source="$(cd "$SOURCE" && pwd)"
    fi
    if [ "$METHOD" = venv ]; then
        py="$VENV/bin/python"
    else
        py="$(find_python)" || return 0
    fi
    mkdir -p "$PREFIX"
    R_METHOD="$METHOD" R_SOURCE="$source" R_SHA="$(installed_sha)" R_VERSION="${1:-}" \
        R_VENV="$([ "$METHOD" = venv ] && printf '%s' "$VENV")" \
        R_PIP_ARGS="${FLOWER_PIP_ARGS:-}" "$py" - "$record" <<'PY' \
        || say "could not write $record: flower update will not know how flower was installed"
import json, os, sys, tempfile, time
keys = ("method", "source", "sha", "version", "venv", "pip_args")
data = {k: os.environ.get("R_" + k.upper(), "") for k in keys}
data["installed_at"] = int(time.time())
path = sys.argv[1]
fd, tmp = tempfile.mkstemp(dir=os.path.dirname(path), prefix=".install.", suffix=".tmp")
with os.fdopen(fd, "w", encoding="utf-8") as f:
    json.dump(data, f, ensure_ascii=False, indent=2)
    f.write("\n")
os.chmod(tmp, 0o644)
os.replace(tmp, path)
PY
}

if [ "$ACTION" = uninstall ]; then
    uninstall
    exit 0
fi

if [ -z "$SOURCE" ]; then
    SOURCE="$(checkout_dir)" || die "not run from a flower checkout: pass --source SPEC or set FLOWER_SOURCE (a path, a wheel or a git URL)"
fi

if use_pipx; then
    install_pipx
else
    install_venv
fi

exe="$(command -v flower 2>/dev/null || true)"
if [ "$METHOD" = venv ]; then
    exe="$LINK"
fi
version="$("$exe" --version 2>/dev/null || true)"
write_record "${version##* }"
step "installed: ${version:-flower} -> $exe"
case ":${PATH:-}:" in
    *":$BIN_DIR:"*) ;;
    *)
        if [ "$METHOD" = venv ]; then
            say "$BIN_DIR is not on your PATH; add this line to your shell's rc file:"
            say "    export PATH=\"$BIN_DIR:\$PATH\""
        fi
        ;;
esac
say "next: cd into a project and run  flower \"what you want done\""
say "      (the first run asks for your API key or gateway token; flower demo works offline)"
