"""TLS material for the fake API server: a throwaway CA and a server certificate signed by it.

Made with ``cryptography`` when importable, else with the ``openssl`` command-line tool. The
certificate names ``localhost`` and ``127.0.0.1`` (and the bind host), valid for a day.
"""

from __future__ import annotations

import ipaddress
import os
import subprocess
from dataclasses import dataclass


@dataclass(frozen=True)
class Material:
    """Paths of the PEM files: ``ca`` goes into kubeconfigs, ``cert``/``key`` into the server."""

    ca: str
    cert: str
    key: str


def generate(directory: str, host: str) -> Material:
    """Write ca.pem, server.pem and server-key.pem into ``directory``."""
    paths = Material(os.path.join(directory, "ca.pem"), os.path.join(directory, "server.pem"),
                     os.path.join(directory, "server-key.pem"))
    try:
        _with_cryptography(paths, host)
    except ImportError:
        _with_openssl(directory, paths, host)
    os.chmod(paths.key, 0o600)
    return paths


def _names(host: str) -> tuple[list[str], list[str]]:
    dns, ips = ["localhost"], ["127.0.0.1", "::1"]
    try:
        ipaddress.ip_address(host)
        if host not in ips:
            ips.append(host)
    except ValueError:
        if host and host not in dns:
            dns.append(host)
    return dns, ips


def _with_cryptography(paths: Material, host: str) -> None:
    import datetime

    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID

    now = datetime.datetime.now(datetime.timezone.utc)
    start, end = now - datetime.timedelta(minutes=5), now + datetime.timedelta(days=1)
    ca_key = ec.generate_private_key(ec.SECP256R1())
    ca_name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "kinformer-test-ca")])
    ca_cert = (
        x509.CertificateBuilder().subject_name(ca_name).issuer_name(ca_name)
        .public_key(ca_key.public_key()).serial_number(x509.random_serial_number())
        .not_valid_before(start).not_valid_after(end)
        .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
        .add_extension(x509.KeyUsage(digital_signature=True, key_cert_sign=True, crl_sign=True,
                                     content_commitment=False, key_encipherment=False,
                                     data_encipherment=False, key_agreement=False,
                                     encipher_only=False, decipher_only=False), critical=True)
        .add_extension(x509.SubjectKeyIdentifier.from_public_key(ca_key.public_key()),
                       critical=False)
        .sign(ca_key, hashes.SHA256())
    )
    key = ec.generate_private_key(ec.SECP256R1())
    dns, ips = _names(host)
    alt = [x509.DNSName(d) for d in dns] + [x509.IPAddress(ipaddress.ip_address(i)) for i in ips]
    cert = (
        x509.CertificateBuilder()
        .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "kinformer-apiserver")]))
        .issuer_name(ca_name).public_key(key.public_key())
        .serial_number(x509.random_serial_number()).not_valid_before(start).not_valid_after(end)
        .add_extension(x509.SubjectAlternativeName(alt), critical=False)
        .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
        .add_extension(x509.AuthorityKeyIdentifier.from_issuer_public_key(ca_key.public_key()),
                       critical=False)
        .add_extension(x509.ExtendedKeyUsage([x509.oid.ExtendedKeyUsageOID.SERVER_AUTH]),
                       critical=False)
        .sign(ca_key, hashes.SHA256())
    )
    with open(paths.ca, "wb") as f:
        f.write(ca_cert.public_bytes(serialization.Encoding.PEM))
    with open(paths.cert, "wb") as f:
        f.write(cert.public_bytes(serialization.Encoding.PEM))
    with open(paths.key, "wb") as f:
        f.write(key.private_bytes(serialization.Encoding.PEM,
                                  serialization.PrivateFormat.PKCS8,
                                  serialization.NoEncryption()))


def _with_openssl(directory: str, paths: Material, host: str) -> None:
    ca_key = os.path.join(directory, "ca-key.pem")
    csr = os.path.join(directory, "server.csr")
    ext = os.path.join(directory, "server.ext")
    dns, ips = _names(host)
    alt = ",".join([f"DNS:{d}" for d in dns] + [f"IP:{i}" for i in ips])
    with open(ext, "w") as f:
        f.write(f"subjectAltName={alt}\nbasicConstraints=critical,CA:FALSE\n"
                "extendedKeyUsage=serverAuth\n")

    def run(*args: str) -> None:
        subprocess.run(["openssl", *args], check=True, capture_output=True)

    run("req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes",
        "-keyout", ca_key, "-out", paths.ca, "-days", "1", "-subj", "/CN=kinformer-test-ca",
        "-addext", "basicConstraints=critical,CA:TRUE,pathlen:0",
        "-addext", "keyUsage=critical,keyCertSign,cRLSign")
    run("req", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes",
        "-keyout", paths.key, "-out", csr, "-subj", "/CN=kinformer-apiserver")
    run("x509", "-req", "-in", csr, "-CA", paths.ca, "-CAkey", ca_key, "-CAcreateserial",
        "-out", paths.cert, "-days", "1", "-extfile", ext)
