"""Credentials of a federation, made with ``cryptography`` (nothing downloaded).

* :func:`make_tls`: a certificate authority of this federation and the SuperLink's TLS
  certificate signed by it (for ``127.0.0.1`` and ``localhost``, or the hosts given;
  the CA's private key is never written, so nothing else can be signed by it later).
  The SuperLink serves its Fleet, Control and Runtime APIs with it
  (``--ssl-ca-certfile``, ``--ssl-certfile``, ``--ssl-keyfile``); SuperNodes
  (``--root-certificates``) and the ``flwr`` CLI (``root-certificates`` in its
  connection config) trust only this CA.
* :func:`make_node_key`: a SuperNode's authentication key pair (EC P-256, a NIST curve
  as Flower requires, OpenSSH format; it signs every request of the node, and P-256
  verifies about 8 times faster than P-384): the private key for ``flower-supernode
  --auth-supernode-private-key``, the public key for ``flwr supernode register``,
  Flower's own registration of the nodes allowed to join a SuperLink started with
  ``--enable-supernode-auth``.
* :func:`make_secret`: a SuperNode's SuperExec authentication secret
  (``flower-supernode --superexec-auth-secret-file``), which its executor presents to
  the node's Runtime API.
* :func:`register_nodes`: registers public keys with the real ``flwr supernode
  register`` command, all in one process.

:func:`main` is the command line (``python -m topofl_lib.flower.security tls | node-key
| secret | register``), which the Flower guide's deployment across machines uses.

Private keys and secrets are created with mode 0600 (``os.open`` with ``O_CREAT |
O_EXCL``: never readable by others, not even for a moment) where they are used: a local
federation's in its folder, and across machines each on its own machine (only
``ca.pem`` and the public keys are copied).
"""

from __future__ import annotations

import datetime as dt
import ipaddress
import os
import stat
from dataclasses import dataclass
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

__all__ = ["LOCAL_HOSTS", "TLSFiles", "main", "make_node_key", "make_secret", "make_tls",
           "register_nodes"]


@dataclass(frozen=True)
class TLSFiles:
    """Paths of a federation's CA certificate and the SuperLink's certificate and key.

    Attributes
    ----------
    ca : Path
        The CA certificate.
    cert : Path
        The SuperLink's certificate.
    key : Path
        The SuperLink's private key.
    """

    ca: Path
    cert: Path
    key: Path


def _write(path: Path, data: bytes, private: bool = False) -> Path:
    """Write ``data`` to a new file; a private one is created with mode 0600 (never
    readable by others: no chmod afterwards). What was at ``path`` is replaced."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.unlink(missing_ok=True)  # also a link: O_EXCL refuses to write through one
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600 if private else 0o644)
    with os.fdopen(fd, "wb") as f:
        f.write(data)
    return path


def _pem_key(key: ec.EllipticCurvePrivateKey) -> bytes:
    return key.private_bytes(serialization.Encoding.PEM,
                             serialization.PrivateFormat.PKCS8,
                             serialization.NoEncryption())


def make_tls(folder, hosts=("127.0.0.1", "localhost"), days: int = 7,
             name: str = "topofl federation") -> TLSFiles:
    """A new certificate authority and a server certificate for ``hosts`` signed by it.

    Parameters
    ----------
    folder : path
        Where ``ca.pem``, ``superlink.pem`` and ``superlink.key`` (mode 0600) are written.
    hosts : sequence of str
        IP addresses and DNS names the server certificate is valid for.
    days : int
        Validity of both certificates.
    name : str
        Common name of the CA.

    Returns
    -------
    TLSFiles
    """
    if not hosts:
        raise ValueError("hosts is empty: the server certificate needs at least one name")
    if days < 1:
        raise ValueError(f"days must be >= 1, got {days}")
    folder = Path(folder)
    now = dt.datetime.now(dt.UTC)
    start, end = now - dt.timedelta(minutes=5), now + dt.timedelta(days=days)
    ca_key = ec.generate_private_key(ec.SECP256R1())
    ca_name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, f"{name} CA")])
    ca_ski = x509.SubjectKeyIdentifier.from_public_key(ca_key.public_key())
    ca = (x509.CertificateBuilder().subject_name(ca_name).issuer_name(ca_name)
          .public_key(ca_key.public_key()).serial_number(x509.random_serial_number())
          .not_valid_before(start).not_valid_after(end)
          .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
          .add_extension(x509.KeyUsage(digital_signature=False, content_commitment=False,
                                       key_encipherment=False, data_encipherment=False,
                                       key_agreement=False, key_cert_sign=True,
                                       crl_sign=True, encipher_only=False,
                                       decipher_only=False), critical=True)
          .add_extension(ca_ski, critical=False)
          .sign(ca_key, hashes.SHA256()))
    key = ec.generate_private_key(ec.SECP256R1())
    sans = []
    for h in hosts:
        try:
            sans.append(x509.IPAddress(ipaddress.ip_address(h)))
        except ValueError:
            sans.append(x509.DNSName(h))
    cert = (x509.CertificateBuilder()
            .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, str(hosts[0]))]))
            .issuer_name(ca_name).public_key(key.public_key())
            .serial_number(x509.random_serial_number())
            .not_valid_before(start).not_valid_after(end)
            .add_extension(x509.SubjectAlternativeName(sans), critical=False)
            .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
            .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH]),
                           critical=False)
            .add_extension(x509.AuthorityKeyIdentifier.from_issuer_subject_key_identifier(
                ca_ski), critical=False)
            .sign(ca_key, hashes.SHA256()))
    pem = serialization.Encoding.PEM
    return TLSFiles(ca=_write(folder / "ca.pem", ca.public_bytes(pem)),
                    cert=_write(folder / "superlink.pem", cert.public_bytes(pem)),
                    key=_write(folder / "superlink.key", _pem_key(key), private=True))


def make_node_key(folder, name: str) -> tuple[Path, Path]:
    """A SuperNode's EC P-256 key pair in OpenSSH format.

    Parameters
    ----------
    folder : path
        Where ``<name>.key`` (mode 0600) and ``<name>.pub`` are written.
    name : str
        File stem, e.g. ``"node_3"``.

    Returns
    -------
    (private_key_path, public_key_path)
    """
    if not name or os.sep in name:
        raise ValueError(f"name must be a plain file stem, got {name!r}")
    folder = Path(folder)
    key = ec.generate_private_key(ec.SECP256R1())
    private = key.private_bytes(serialization.Encoding.PEM,
                                serialization.PrivateFormat.OpenSSH,
                                serialization.NoEncryption())
    public = key.public_key().public_bytes(serialization.Encoding.OpenSSH,
                                           serialization.PublicFormat.OpenSSH)
    return (_write(folder / f"{name}.key", private, private=True),
            _write(folder / f"{name}.pub", public + b"\n"))


def make_secret(path) -> Path:
    """A SuperExec authentication secret at ``path`` (mode 0600), kept if it is one already.

    An existing regular file that only its owner can read or write is kept (a SuperNode
    and its executor each read it as they start: one rewritten while a node starts could
    split them); anything else at ``path`` (a secret left readable by others, say) is
    replaced by a new one: 32 random bytes, as hex.

    Parameters
    ----------
    path : str or Path
        The secret file (its folder is created if missing).

    Returns
    -------
    Path
        ``path``.
    """
    path = Path(path)
    try:
        mode = path.lstat().st_mode
    except FileNotFoundError:
        mode = 0
    if stat.S_ISREG(mode) and not mode & 0o077:
        return path
    return _write(path, os.urandom(32).hex().encode(), private=True)


def register_nodes(public_keys, superlink: str = "local") -> None:
    """Register ``public_keys`` with ``flwr supernode register`` (Flower's CLI, in process).

    The CLI reads its connection ``superlink`` from ``$FLWR_HOME/config.toml``; a failed
    registration raises ``RuntimeError``.

    Parameters
    ----------
    public_keys : iterable of str or Path
        SuperNode public key files.
    superlink : str, default="local"
        Name of the SuperLink connection in ``$FLWR_HOME/config.toml``.
    """
    import click
    import typer
    from flwr.cli.app import app

    command = typer.main.get_command(app)
    for key in public_keys:
        try:
            command.main(["supernode", "register", str(key), superlink],
                         prog_name="flwr", standalone_mode=False)
        except (click.ClickException, SystemExit) as err:
            raise RuntimeError(f"flwr supernode register {key} failed: {err}") from err


#: Names always in the SuperLink's certificate made by ``python -m ... tls``: the
#: ServerApp the SuperLink starts connects to it locally (at 127.0.0.1 when it listens
#: on 0.0.0.0).
LOCAL_HOSTS = ("127.0.0.1", "localhost")


def _parser():
    from .._validation import OneLineArgumentParser

    parser = OneLineArgumentParser(prog="python -m topofl_lib.flower.security",
                                   description="Make a federation's credentials (CA, TLS "
                                               "certificate, SuperNode keys, SuperExec "
                                               "secret) and register SuperNode keys.")
    sub = parser.add_subparsers(dest="command", required=True)
    tls = sub.add_parser("tls", help="a new CA and the SuperLink's TLS certificate signed "
                                     "by it: ca.pem, superlink.pem, superlink.key (0600)")
    tls.add_argument("folder", help="where the three files are written")
    tls.add_argument("--hosts", nargs="+", required=True,
                     help="the addresses and DNS names SuperNodes and the flwr CLI reach "
                          "the SuperLink at (127.0.0.1 and localhost are added)")
    tls.add_argument("--days", type=int, default=365, help="validity (default 365)")
    key = sub.add_parser("node-key", help="a SuperNode's key pair: NAME.key (0600), NAME.pub")
    key.add_argument("folder")
    key.add_argument("name", help="file stem, e.g. node_0")
    secret = sub.add_parser("secret", help="a SuperNode's SuperExec secret (0600)")
    secret.add_argument("path")
    reg = sub.add_parser("register", help="register SuperNode public keys with "
                                          "flwr supernode register")
    reg.add_argument("public_keys", nargs="+", metavar="PUBLIC_KEY")
    reg.add_argument("--superlink", default="local",
                     help="the connection's name in $FLWR_HOME/config.toml (default: local)")
    return parser, sub.choices


def main(argv=None) -> None:
    """``python -m topofl_lib.flower.security tls|node-key|secret|register ...``.

    ``tls FOLDER --hosts HOST ...`` (:func:`make_tls`, valid for the hosts given and
    :data:`LOCAL_HOSTS`), ``node-key FOLDER NAME`` (:func:`make_node_key`), ``secret
    PATH`` (:func:`make_secret`), ``register PUBLIC_KEY ... [--superlink NAME]``
    (:func:`register_nodes`). Prints the files written; a bad argument is one line on
    stderr, exit status 2.

    Parameters
    ----------
    argv : list of str, optional
        The arguments (default: this process's).
    """
    parser, commands = _parser()
    args = parser.parse_args(argv)
    try:
        if args.command == "tls":
            hosts = list(dict.fromkeys([*args.hosts, *LOCAL_HOSTS]))
            made = make_tls(args.folder, hosts=hosts, days=args.days)
            written = [made.ca, made.cert, made.key]
        elif args.command == "node-key":
            written = list(make_node_key(args.folder, args.name))
        elif args.command == "secret":
            written = [make_secret(args.path)]
        else:
            register_nodes(args.public_keys, args.superlink)
            written = []
    except ValueError as exc:
        commands[args.command].error(str(exc))
    for path in written:
        print(path)


if __name__ == "__main__":
    main()
