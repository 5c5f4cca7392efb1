"""``flower setup``'s probe behind a TLS-intercepting proxy: a gateway whose certificate is
signed by a CA the system does not know is trusted once ``REQUESTS_CA_BUNDLE`` or
``SSL_CERT_FILE`` names that CA — from the environment or a ``.env`` — and a bundle that is not
there is a configuration error, said in one line."""

from __future__ import annotations

import ssl
import subprocess
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from flower import texts
from flower.core.env import PROBE_CONFIG, PROBE_NET, PROBE_OK, probe_credentials

OK_BODY = b'{"type":"message","content":[{"type":"text","text":"hi"}]}'


def _openssl(*args: str, cwd: Path) -> None:
    subprocess.run(["openssl", *args], cwd=cwd, check=True, capture_output=True)


@pytest.fixture(scope="module")
def certs(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A private CA and a certificate for 127.0.0.1 signed by it, like a proxy's."""
    d = tmp_path_factory.mktemp("ca")
    _openssl("req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", "ca.key", "-out",
             "ca.crt", "-days", "2", "-subj", "/CN=flower test proxy CA", cwd=d)
    _openssl("req", "-newkey", "rsa:2048", "-nodes", "-keyout", "gw.key", "-out", "gw.csr",
             "-subj", "/CN=127.0.0.1", cwd=d)
    _openssl("req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", "other.key", "-out",
             "other.crt", "-days", "2", "-subj", "/CN=some other CA", cwd=d)
    (d / "ext.cnf").write_text("subjectAltName=IP:127.0.0.1\n")
    _openssl("x509", "-req", "-in", "gw.csr", "-CA", "ca.crt", "-CAkey", "ca.key",
             "-CAcreateserial", "-out", "gw.crt", "-days", "2", "-extfile", "ext.cnf", cwd=d)
    return d


@pytest.fixture
def gateway(certs: Path) -> Iterator[str]:
    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            self.rfile.read(int(self.headers.get("content-length") or 0))
            self.send_response(200)
            self.send_header("content-type", "application/json")
            self.send_header("content-length", str(len(OK_BODY)))
            self.end_headers()
            self.wfile.write(OK_BODY)

        def log_message(self, *args: object) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    tls = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    tls.load_cert_chain(certs / "gw.crt", certs / "gw.key")
    server.socket = tls.wrap_socket(server.socket, server_side=True)
    thread = threading.Thread(target=server.serve_forever, args=(0.02,), daemon=True)
    thread.start()
    yield f"https://127.0.0.1:{server.server_address[1]}"
    server.shutdown()
    server.server_close()


def _env(url: str, **extra: str) -> dict[str, str]:
    return {"ANTHROPIC_API_KEY": "sk-ant-probe-ca-test", "ANTHROPIC_BASE_URL": url, **extra}


def test_unknown_ca_is_a_network_verdict(gateway: str) -> None:
    verdict, detail = probe_credentials(5, environ=_env(gateway))
    assert verdict == PROBE_NET and "CERTIFICATE_VERIFY_FAILED" in detail


@pytest.mark.parametrize("name", ["SSL_CERT_FILE", "REQUESTS_CA_BUNDLE"])
def test_named_ca_is_trusted(gateway: str, certs: Path, name: str) -> None:
    assert probe_credentials(5, environ=_env(gateway, **{name: str(certs / "ca.crt")}))[0] \
        == PROBE_OK


def test_requests_ca_bundle_wins_over_ssl_cert_file(gateway: str, certs: Path) -> None:
    env = _env(gateway, REQUESTS_CA_BUNDLE=str(certs / "ca.crt"),
               SSL_CERT_FILE=str(certs / "other.crt"))
    assert probe_credentials(5, environ=env)[0] == PROBE_OK
    env.update(REQUESTS_CA_BUNDLE=str(certs / "other.crt"), SSL_CERT_FILE=str(certs / "ca.crt"))
    assert probe_credentials(5, environ=env)[0] == PROBE_NET


def test_missing_bundle_is_said(gateway: str, certs: Path) -> None:
    gone = certs / "nothing.crt"
    verdict, detail = probe_credentials(5, environ=_env(gateway, SSL_CERT_FILE=str(gone)))
    assert verdict == PROBE_CONFIG and detail == texts.PROBE_CA_MISSING.format(path=gone)
    assert "\n" not in detail
