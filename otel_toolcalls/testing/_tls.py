"""A throwaway self-signed certificate for 127.0.0.1, for the fakes that speak TLS."""

from __future__ import annotations

import datetime
import ipaddress
import ssl
import tempfile


def self_signed() -> tuple[bytes, bytes]:
    """(certificate PEM, private key PEM) for 127.0.0.1, valid for a day."""
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID

    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "127.0.0.1")])
    now = datetime.datetime.now(datetime.timezone.utc)
    where = x509.SubjectAlternativeName([x509.IPAddress(ipaddress.ip_address("127.0.0.1"))])
    certificate = (
        x509.CertificateBuilder().subject_name(name).issuer_name(name).public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(days=1))
        .add_extension(where, critical=False)
        .sign(key, hashes.SHA256())
    )  # fmt: skip
    key_pem = key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    )
    return certificate.public_bytes(serialization.Encoding.PEM), key_pem


def server_context(pem: bytes, key_pem: bytes, alpn: list[str] | None = None) -> ssl.SSLContext:
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    with tempfile.TemporaryDirectory() as folder:
        cert_file, key_file = f"{folder}/cert.pem", f"{folder}/key.pem"
        with open(cert_file, "wb") as out:
            out.write(pem)
        with open(key_file, "wb") as out:
            out.write(key_pem)
        context.load_cert_chain(cert_file, key_file)
    if alpn:
        context.set_alpn_protocols(alpn)
    return context
