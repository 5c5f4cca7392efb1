"""install.sh behind a TLS-intercepting proxy: the CA bundle named by REQUESTS_CA_BUNDLE (else
SSL_CERT_FILE) reaches pip and git, an explicit PIP_CERT stays, and a bundle that is not
there stops the install before anything is installed."""

from __future__ import annotations

import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def _install(tmp_path: Path, **env: str) -> tuple[subprocess.CompletedProcess[str], str]:
    """install.sh with a stand-in pipx that records the certificate settings pip would get."""
    bin_dir, seen = tmp_path / "bin", tmp_path / "seen"
    bin_dir.mkdir(exist_ok=True)
    (bin_dir / "pipx").write_text(
        "#!/bin/sh\n"
        f'echo "PIP_CERT=${{PIP_CERT:-}} GIT_SSL_CAINFO=${{GIT_SSL_CAINFO:-}}" > "{seen}"\n'
        f'printf "#!/bin/sh\\necho flower, version 0.1.0\\n" > "{bin_dir}/flower"\n'
        f'chmod +x "{bin_dir}/flower"\n')
    (bin_dir / "pipx").chmod(0o755)
    base = {"HOME": str(tmp_path / "home"), "LANG": "C.UTF-8",
            "PATH": f"{bin_dir}:/usr/local/bin:/usr/bin:/bin"}
    out = subprocess.run(["bash", str(ROOT / "install.sh")], env={**base, **env}, cwd=tmp_path,
                         capture_output=True, text=True, timeout=60, stdin=subprocess.DEVNULL)
    return out, seen.read_text().strip() if seen.exists() else ""


def test_named_bundle_reaches_pip_and_git(tmp_path: Path) -> None:
    proxy, system = tmp_path / "proxy.pem", tmp_path / "system.pem"
    proxy.write_text("pem")
    system.write_text("pem")
    out, seen = _install(tmp_path, SSL_CERT_FILE=str(system))
    assert out.returncode == 0, out.stderr
    assert seen == f"PIP_CERT={system} GIT_SSL_CAINFO={system}"
    out, seen = _install(tmp_path, SSL_CERT_FILE=str(system), REQUESTS_CA_BUNDLE=str(proxy))
    assert seen == f"PIP_CERT={proxy} GIT_SSL_CAINFO={proxy}"  # requests' own name wins
    out, seen = _install(tmp_path, SSL_CERT_FILE=str(proxy), PIP_CERT=str(system))
    assert seen == f"PIP_CERT={system} GIT_SSL_CAINFO={proxy}"  # an explicit PIP_CERT stays
    out, seen = _install(tmp_path)
    assert seen == "PIP_CERT= GIT_SSL_CAINFO="  # nothing named: pip's own store


def test_missing_bundle_stops_the_install(tmp_path: Path) -> None:
    gone = tmp_path / "gone.pem"
    out, seen = _install(tmp_path, REQUESTS_CA_BUNDLE=str(gone))
    assert out.returncode == 1 and f"{gone}" in out.stderr and seen == ""
    assert not (tmp_path / "home" / ".local").exists()
