"""TLS: ``gym-tinker cluster up`` with certificates; clients with them work, clients without are refused."""

from __future__ import annotations

import datetime as dt
import ipaddress
import os
import re
import select
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from distributed import Security
from typer.testing import CliRunner

from executors import connect
from executors.cli import app


def make_certificates(directory: Path) -> tuple[str, str, str]:
    """A CA and one certificate it signs (for 127.0.0.1/localhost, server and client use).

    Uses the ``cryptography`` package, else the ``openssl`` command; skips the test without both.
    """
    try:
        import cryptography  # noqa: F401
    except ImportError:
        if shutil.which("openssl") is None:
            pytest.skip("needs the cryptography package or the openssl command to make certificates")
        return _openssl_certificates(directory)
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

    def _name(common: str) -> x509.Name:
        return x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, common)])

    now = dt.datetime.now(dt.UTC)
    ca_key = ec.generate_private_key(ec.SECP256R1())
    ca = (
        x509.CertificateBuilder().subject_name(_name("gym-tinker test CA")).issuer_name(_name("gym-tinker test CA"))
        .public_key(ca_key.public_key()).serial_number(x509.random_serial_number())
        .not_valid_before(now - dt.timedelta(minutes=5)).not_valid_after(now + dt.timedelta(days=1))
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .sign(ca_key, hashes.SHA256())
    )  # fmt: skip
    key = ec.generate_private_key(ec.SECP256R1())
    cert = (
        x509.CertificateBuilder().subject_name(_name("gym-tinker node")).issuer_name(ca.subject)
        .public_key(key.public_key()).serial_number(x509.random_serial_number())
        .not_valid_before(now - dt.timedelta(minutes=5)).not_valid_after(now + dt.timedelta(days=1))
        .add_extension(
            x509.SubjectAlternativeName([x509.DNSName("localhost"), x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]),
            critical=False,
        )
        .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH, ExtendedKeyUsageOID.CLIENT_AUTH]), critical=False)
        .sign(ca_key, hashes.SHA256())
    )  # fmt: skip
    paths = (directory / "ca.pem", directory / "node.pem", directory / "node.key")
    paths[0].write_bytes(ca.public_bytes(serialization.Encoding.PEM))
    paths[1].write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    paths[2].write_bytes(
        key.private_bytes(
            serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
        )
    )
    return tuple(str(p) for p in paths)  # type: ignore[return-value]


def _openssl_certificates(directory: Path) -> tuple[str, str, str]:
    ca, ca_key, cert, key, csr = (
        str(directory / n) for n in ("ca.pem", "ca.key", "node.pem", "node.key", "node.csr")
    )
    ext = directory / "ext.cnf"
    ext.write_text("subjectAltName=IP:127.0.0.1,DNS:localhost\nextendedKeyUsage=serverAuth,clientAuth\n")
    ec = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes"]
    run = [
        ["openssl", "req", "-x509", *ec, "-keyout", ca_key, "-out", ca, "-days", "1", "-subj", "/CN=gym-tinker test CA"],
        ["openssl", "req", *ec, "-keyout", key, "-out", csr, "-subj", "/CN=gym-tinker node"],
        ["openssl", "x509", "-req", "-in", csr, "-CA", ca, "-CAkey", ca_key, "-CAcreateserial", "-out", cert,
         "-days", "1", "-extfile", str(ext)],
    ]  # fmt: skip
    for cmd in run:
        subprocess.run(cmd, check=True, capture_output=True)
    return ca, cert, key


@pytest.fixture
def tls_cluster(tmp_path):
    ca, cert, key = make_certificates(tmp_path)
    proc = subprocess.Popen(
        [sys.executable, "-m", "executors.cli", "cluster", "up", "--port", "0", "--workers", "1",
         "--state-dir", str(tmp_path / "state"), "--tls-ca-file", ca, "--tls-cert", cert, "--tls-key", key],
        stdout=subprocess.PIPE, text=True, env={**os.environ, "PYTHONUNBUFFERED": "1"},
    )  # fmt: skip
    try:
        assert proc.stdout is not None
        ready, _, _ = select.select([proc.stdout], [], [], 90)
        line = proc.stdout.readline() if ready else ""
        match = re.search(r"tls://127\.0\.0\.1:\d+", line)
        assert match, f"cluster up printed {line!r}"
        yield match.group(0), (ca, cert, key)
    finally:
        proc.send_signal(signal.SIGINT)
        try:
            proc.wait(30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        if proc.stdout is not None:
            proc.stdout.close()
    assert proc.returncode == 0


REFUSED = """
import sys
from distributed import Security
from executors import ConnectError, connect
try:
    connect(sys.argv[1], security={security}, timeout=5)
except ConnectError as exc:
    print("refused:", exc)
    sys.exit(0)
sys.exit(1)
"""


def refused(address: str, security: str) -> str:
    """Whether a fresh process connecting with ``security`` (Python source) gets ConnectError.

    Returns "" when it was refused, else what the process printed (for the assertion message).
    """
    code = REFUSED.replace("{security}", security)
    proc = subprocess.run([sys.executable, "-c", code, address], capture_output=True, text=True, timeout=120)
    return "" if proc.returncode == 0 and "refused:" in proc.stdout else proc.stdout + proc.stderr[-3000:]


def test_tls_cluster_accepts_certified_clients_only(tls_cluster, tmp_path, monkeypatch):
    address, (ca, cert, key) = tls_cluster
    security = Security(tls_ca_file=ca, tls_client_cert=cert, tls_client_key=key, require_encryption=True)
    with connect(address, security=security, timeout=30) as client:
        deadline = time.monotonic() + 60
        while not client.dask.scheduler_info()["workers"]:
            assert time.monotonic() < deadline
            time.sleep(0.1)
        handle = client.submit({"kind": "steps", "params": {"steps": 2, "step_seconds": 0}})
        assert handle.result(timeout=60)["accumulator"] == 3

    # Refused clients run in their own processes, as they would in real life.
    for security_args in ("None", f"Security(tls_ca_file={ca!r}, require_encryption=True)"):
        assert not refused(address, security_args), refused(address, security_args)
    assert not refused(address.replace("tls://", "tcp://"), "None")

    monkeypatch.setenv("GYM_TINKER_ADDRESS", address)
    result = CliRunner().invoke(app, ["jobs", "--tls-ca-file", ca, "--tls-cert", cert, "--tls-key", key])
    assert result.exit_code == 0, result.output
    plain = subprocess.run(
        [sys.executable, "-m", "executors.cli", "jobs"], env={**os.environ, "GYM_TINKER_ADDRESS": address},
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert plain.returncode == 3, plain.stderr
    assert os.path.exists(tmp_path / "state" / "journal.sqlite")
