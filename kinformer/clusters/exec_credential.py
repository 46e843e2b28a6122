"""Exec credential plugins: client-go's ``client.authentication.k8s.io`` exec provider, on threads.

A plugin is a command that prints an ``ExecCredential`` (a bearer token, or a client certificate
and key, maybe with an ``expirationTimestamp``) on its standard output; kubeconfigs name one
under ``users[].user.exec``, and the Cluster Inventory API's consumers (KEP-5339) name one per
access provider. :class:`ExecConfig` is that configuration, checked; :func:`run_plugin` runs it
once; an :class:`ExecCredentialSource` keeps its credential until it expired and runs it again
when asked after that; :func:`exec_api_client` makes an official-client ``ApiClient`` whose
every request asks the source first, so a member's informers always send a live credential.
Used by the ClusterProfile provider (``cluster_profile.py``). Nothing here logs or shows a
credential: the plugin's output is never quoted, and reprs name only the kind of credential.
"""

from __future__ import annotations

import base64
import binascii
import datetime
import functools
import json
import logging
import os
import re
import subprocess
import tempfile
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from kinformer import _checks, errors
from kinformer.client import pool

log = logging.getLogger(__name__)

API_VERSIONS = ("client.authentication.k8s.io/v1", "client.authentication.k8s.io/v1beta1")
"""The ``ExecCredential`` versions a plugin may speak (client-go's; ``v1alpha1`` is long gone)."""

EXEC_INFO_ENV = "KUBERNETES_EXEC_INFO"
"""The environment variable through which a plugin gets its ``ExecCredential`` request."""

EXEC_EXTENSION = "client.authentication.k8s.io/exec"
"""The cluster extension whose value a plugin gets as ``spec.cluster.config``."""

PLUGIN_TIMEOUT = 30.0  # seconds; client-go has none, but a plugin that hangs must not hold a member forever
RETRY_MIN, RETRY_MAX = 1.0, 60.0  # a failing plugin runs again at most this often, doubling between
CLUSTER_INFO_KEYS = ("server", "tls-server-name", "insecure-skip-tls-verify",
                     "certificate-authority-data", "proxy-url", "disable-compression")
_STDERR_LIMIT = 200  # characters of a failed plugin's last stderr line quoted in its error


@dataclass(frozen=True)
class ExecConfig:
    """A ``client.authentication.k8s.io`` exec plugin's configuration, checked.

    :meth:`from_dict` reads the kubeconfig spelling (``command``, ``args``, ``env`` as
    ``[{"name", "value"}]``, ``apiVersion``, ``provideClusterInfo``, ``interactiveMode``,
    ``installHint``). Plugins run without a terminal: ``interactiveMode: Always`` is refused.
    The repr leaves out the arguments and the environment (either may carry a credential).
    """

    command: str
    args: tuple[str, ...] = field(default=(), repr=False)
    env: tuple[tuple[str, str], ...] = field(default=(), repr=False)
    api_version: str = API_VERSIONS[0]
    provide_cluster_info: bool = False
    install_hint: str = field(default="", repr=False)

    @classmethod
    def from_dict(cls, config: Any, where: str = "execConfig") -> ExecConfig:
        """The configuration ``config`` describes; :class:`~kinformer.ConfigurationError` saying
        what is wrong (never quoting an ``env`` value) when it is not one."""
        if not isinstance(config, Mapping):
            raise errors.ConfigurationError(f"{where} must be a mapping, got {type(config).__name__}")
        command = config.get("command")
        if not isinstance(command, str) or not command:
            raise errors.ConfigurationError(f"{where}.command must be a non-empty string")
        args = config.get("args") or []
        if not isinstance(args, list) or not all(isinstance(a, str) for a in args):
            raise errors.ConfigurationError(f"{where}.args must be a list of strings")
        env: list[tuple[str, str]] = []
        for i, entry in enumerate(config.get("env") or []):
            if not (isinstance(entry, Mapping) and isinstance(entry.get("name"), str) and entry["name"]
                    and isinstance(entry.get("value"), str)):
                raise errors.ConfigurationError(f"{where}.env[{i}] must have a string name and value")
            env.append((entry["name"], entry["value"]))
        api_version = config.get("apiVersion", API_VERSIONS[0])
        if api_version not in API_VERSIONS:
            raise errors.ConfigurationError(
                f"{where}.apiVersion must be one of {', '.join(API_VERSIONS)}, got {api_version!r}")
        mode = config.get("interactiveMode", "Never")
        if mode not in ("Never", "IfAvailable", "Always"):
            raise errors.ConfigurationError(
                f"{where}.interactiveMode must be Never, IfAvailable or Always, got {mode!r}")
        if mode == "Always":
            raise errors.ConfigurationError(
                f"{where}.interactiveMode Always cannot be honoured: plugins run without a terminal")
        provide = config.get("provideClusterInfo", False)
        if not isinstance(provide, bool):
            raise errors.ConfigurationError(f"{where}.provideClusterInfo must be true or false")
        hint = config.get("installHint") or ""
        return cls(command, tuple(args), tuple(env), api_version, provide, str(hint))


@dataclass(frozen=True)
class ExecCredential:
    """What a plugin gave: a bearer ``token``, or a client certificate and key (PEM), and when
    it expires (``expiration``, POSIX seconds; None: never). The repr names neither."""

    token: str | None = field(default=None, repr=False)
    client_certificate_data: str | None = field(default=None, repr=False)
    client_key_data: str | None = field(default=None, repr=False)
    expiration: float | None = None

    def expired(self, now: float) -> bool:
        """Whether ``expirationTimestamp`` has passed at ``now`` (POSIX seconds)."""
        return self.expiration is not None and now >= self.expiration

    def __repr__(self) -> str:
        kind = "token" if self.token is not None else "client certificate"
        until = "no expiry" if self.expiration is None else (
            "expires " + datetime.datetime.fromtimestamp(self.expiration, datetime.timezone.utc)
            .isoformat(timespec="seconds"))
        return f"<ExecCredential {kind}, {until}>"


def exec_cluster_info(cluster: Mapping[str, Any]) -> dict[str, Any]:
    """The ``spec.cluster`` a plugin with ``provideClusterInfo`` gets, from a kubeconfig-style
    ``cluster`` (its server, CA data, TLS server name, proxy ...; the value of its
    :data:`EXEC_EXTENSION` extension as ``config``)."""
    info = {key: cluster[key] for key in CLUSTER_INFO_KEYS if key in cluster}
    for extension in cluster.get("extensions") or ():
        if isinstance(extension, Mapping) and extension.get("name") == EXEC_EXTENSION:
            info["config"] = extension.get("extension")
    return info


def run_plugin(config: ExecConfig, cluster: Mapping[str, Any] | None = None,
               timeout: float = PLUGIN_TIMEOUT) -> ExecCredential:
    """Run the plugin once and return its credential. Blocks for at most ``timeout`` seconds.

    The plugin gets this process's environment plus ``config.env``, no standard input, and in
    :data:`EXEC_INFO_ENV` an ``ExecCredential`` request: ``spec.interactive`` false and, when
    ``config.provide_cluster_info``, ``spec.cluster`` (:func:`exec_cluster_info` of
    ``cluster``). A plugin that cannot start, exits non-zero, outlives ``timeout`` or prints
    anything but an ``ExecCredential`` of its ``apiVersion`` with a token or a certificate
    and key raises :class:`~kinformer.ExecPluginError`; its output is never quoted.
    """
    timeout = _checks.seconds("timeout", timeout, positive=True)
    spec: dict[str, Any] = {"interactive": False}
    if config.provide_cluster_info and cluster is not None:
        spec["cluster"] = exec_cluster_info(cluster)
    env = dict(os.environ)
    env.update(config.env)
    env[EXEC_INFO_ENV] = json.dumps(
        {"apiVersion": config.api_version, "kind": "ExecCredential", "spec": spec})
    name = os.path.basename(config.command)
    try:
        done = subprocess.run([config.command, *config.args], env=env, stdin=subprocess.DEVNULL,
                              capture_output=True, timeout=timeout, check=False)
    except subprocess.TimeoutExpired:
        raise errors.ExecPluginError(f"exec plugin {name} gave no credential within {timeout:g} s") from None
    except OSError as err:
        hint = f" ({config.install_hint})" if config.install_hint else ""
        raise errors.ExecPluginError(
            f"exec plugin {name} could not start: {err.strerror or type(err).__name__}{hint}") from None
    if done.returncode != 0:
        said = plugin_said(done.stderr, done.stdout)
        raise errors.ExecPluginError(
            f"exec plugin {name} exited with code {done.returncode}" + (f": {said}" if said else ""))
    return parse_exec_credential(done.stdout, config.api_version, name)


def plugin_said(stderr: bytes | str | None, stdout: bytes | str | None = None) -> str:
    """The last non-empty line a failed plugin wrote on stderr, cut short: its own error
    message, with any credential in it hidden (:func:`kinformer.errors.redact`): what looks
    like one, and the token or key it printed on ``stdout`` all the same."""
    if isinstance(stderr, bytes):
        stderr = stderr.decode("utf-8", "replace")
    lines = [line.strip() for line in (stderr or "").splitlines() if line.strip()]
    return errors.redact(lines[-1], _printed_credentials(stdout))[:_STDERR_LIMIT] if lines else ""


def _printed_credentials(stdout: bytes | str | None) -> list[str]:
    """The token and key of the ``ExecCredential`` a plugin printed, if it printed one."""
    try:
        status = json.loads(stdout or "").get("status")
    except (ValueError, UnicodeDecodeError, AttributeError):
        return []
    if not isinstance(status, dict):
        return []
    return [v for k, v in status.items() if k in ("token", "clientKeyData") and isinstance(v, str)]


def parse_exec_credential(output: bytes | str, api_version: str = API_VERSIONS[0],
                          plugin: str = "plugin") -> ExecCredential:
    """The credential of a plugin's ``output``, else :class:`~kinformer.ExecPluginError` saying
    what is wrong with it (never quoting it)."""
    what = f"exec plugin {plugin}"
    try:
        document = json.loads(output)
    except (ValueError, UnicodeDecodeError):
        raise errors.ExecPluginError(f"{what} printed no JSON ExecCredential") from None
    if not isinstance(document, dict) or document.get("kind") != "ExecCredential":
        raise errors.ExecPluginError(f"{what} printed JSON that is not an ExecCredential")
    if document.get("apiVersion") != api_version:
        raise errors.ExecPluginError(
            f"{what} answered in apiVersion {str(document.get('apiVersion'))[:64]!r}, "
            f"not the {api_version!r} it was asked for")
    status = document.get("status")
    if not isinstance(status, dict):
        raise errors.ExecPluginError(f"{what} printed an ExecCredential without a status")
    token = status.get("token")
    cert, key = status.get("clientCertificateData"), status.get("clientKeyData")
    if token is not None and (not isinstance(token, str) or not token):
        raise errors.ExecPluginError(f"{what} printed an empty or non-string token")
    if token is None:
        if not (isinstance(cert, str) and cert and isinstance(key, str) and key):
            raise errors.ExecPluginError(
                f"{what} printed neither a token nor both clientCertificateData and clientKeyData")
    else:
        cert = key = None
    return ExecCredential(token, cert, key, _expiration(status.get("expirationTimestamp"), what))


_FRACTION = re.compile(r"\.(\d+)")


def _expiration(value: Any, what: str) -> float | None:
    """``expirationTimestamp`` (RFC 3339) as POSIX seconds; None when absent."""
    if value is None or value == "":
        return None
    if isinstance(value, str):
        text = _FRACTION.sub(lambda m: "." + m.group(1)[:6].ljust(6, "0"), value.strip())
        text = text[:-1] + "+00:00" if text[-1:] in ("Z", "z") else text
        try:
            parsed = datetime.datetime.fromisoformat(text.replace("t", "T"))
        except ValueError:
            parsed = None
        if parsed is not None and parsed.tzinfo is not None:
            return parsed.timestamp()
    raise errors.ExecPluginError(f"{what} printed an expirationTimestamp that is not RFC 3339")


class ExecCredentialSource:
    """One plugin for one cluster: its credential, kept until it expired.

    :meth:`get` runs the plugin when there is no credential yet or the last one's
    ``expirationTimestamp`` has passed, and raises :class:`~kinformer.ExecPluginError` when it
    fails. :meth:`refresh` is what requests call: it never raises; a failed run is logged (at
    ERROR the first time of a run of failures, naming ``what``, then at DEBUG), the last
    credential is kept (the server then refuses it, and the caller backs off), and the plugin
    runs again no sooner than a backoff of 1 s doubling to 60 s. Thread-safe: one run at a time,
    and callers wait for it.
    """

    def __init__(self, config: ExecConfig, cluster: Mapping[str, Any] | None, what: str, *,
                 timeout: float = PLUGIN_TIMEOUT, wall_clock: Callable[[], float] = time.time) -> None:
        self.config = config
        self.what = what
        self._cluster = dict(cluster) if cluster is not None else None
        self._timeout = _checks.seconds("timeout", timeout, positive=True)
        self._wall_clock = wall_clock  # expirations are wall-clock times; backoff runs on monotonic
        self._lock = threading.Lock()  # guards every field below; held while the plugin runs
        self._credential: ExecCredential | None = None
        self._retry_at = 0.0  # no run before this, after a failure
        self._backoff = 0.0  # the last wait after a failure; 0 when the last run worked
        self.runs = 0  # times the plugin ran

    def get(self) -> ExecCredential:
        """The live credential, running the plugin when there is none or it expired."""
        with self._lock:
            credential = self._credential
            if credential is not None and not credential.expired(self._wall_clock()):
                return credential
            return self._run()

    def refresh(self) -> ExecCredential | None:
        """The live credential, or, when the plugin fails or is backing off, the last one (None
        if it never gave one). Never raises."""
        with self._lock:
            credential = self._credential
            if credential is not None and not credential.expired(self._wall_clock()):
                return credential
            if time.monotonic() < self._retry_at:
                return credential
            try:
                return self._run()
            except errors.ExecPluginError as err:
                first = self._backoff == 0.0
                self._backoff = min(RETRY_MAX, max(RETRY_MIN, self._backoff * 2))
                self._retry_at = time.monotonic() + self._backoff
                held = [] if credential is None else [credential.token or "",
                                                      credential.client_key_data or ""]
                log.log(logging.ERROR if first else logging.DEBUG,
                        "%s: credential not refreshed: %s; retrying in %.0f s", self.what,
                        errors.redact(str(err), held), self._backoff)
                return credential

    def _run(self) -> ExecCredential:
        self.runs += 1
        credential = run_plugin(self.config, self._cluster, self._timeout)
        if self._backoff:
            log.info("%s: exec plugin gives credentials again", self.what)
        self._credential, self._backoff, self._retry_at = credential, 0.0, 0.0
        return credential

    def __deepcopy__(self, memo: Any) -> ExecCredentialSource:
        return self  # one source per cluster: a copied Configuration asks the same one

    def __repr__(self) -> str:
        return f"<ExecCredentialSource {self.what} {os.path.basename(self.config.command)}>"


def exec_api_client(cluster: Mapping[str, Any], source: ExecCredentialSource,
                    configure: Callable[[Any], object] | None = None) -> Any:
    """A new ``kubernetes.client.ApiClient`` for the kubeconfig-style ``cluster`` (``server``,
    ``certificate-authority-data``, ``tls-server-name``, ``proxy-url``,
    ``insecure-skip-tls-verify``) that authenticates with ``source``'s credential.

    Runs the plugin now if ``source`` has no live credential (:class:`~kinformer.ExecPluginError`
    when it fails); a ``cluster`` without a server or with CA data that is not base64 raises
    :class:`~kinformer.ConfigurationError`. Every request then asks ``source.refresh()`` first,
    so a credential past its expiry is replaced before it is sent. A client certificate lives
    in owner-only files that :func:`close_api_client` removes; close the client with it.
    ``configure``, when given, is called with the ``Configuration`` before the client is made
    of it (a member's settings, say).
    """
    from kubernetes import client

    server = cluster.get("server")
    if not isinstance(server, str) or not server:
        raise errors.ConfigurationError("the cluster has no server")
    ca_data = cluster.get("certificate-authority-data")
    ca_pem: str | None = None
    if ca_data:
        try:
            ca_pem = base64.b64decode(str(ca_data), validate=True).decode("ascii")
        except (binascii.Error, UnicodeDecodeError):
            raise errors.ConfigurationError("certificate-authority-data is not base64 PEM") from None
    credential = source.get()
    configuration = _configuration_class()()
    configuration.host = server.rstrip("/")
    if ca_pem is not None:
        configuration.ca_cert_data = ca_pem
    if cluster.get("insecure-skip-tls-verify") is True:
        configuration.verify_ssl = False
    if cluster.get("tls-server-name"):
        configuration.tls_server_name = str(cluster["tls-server-name"])
    if cluster.get("proxy-url"):
        configuration.proxy = str(cluster["proxy-url"])
    configuration.kinformer_credentials = _Credentials(source)
    configuration.kinformer_credentials.apply(configuration, credential)
    if configure is not None:
        configure(configuration)
    return client.ApiClient(configuration)


def close_api_client(api_client: Any) -> None:
    """Close a client of :func:`exec_api_client`, and kinformer's connections through it, and
    remove its certificate files."""
    try:
        api_client.close()
        pool.close(api_client)
    finally:
        credentials = getattr(api_client.configuration, "kinformer_credentials", None)
        if isinstance(credentials, _Credentials):
            credentials.close()


class _Credentials:
    """Puts a source's credential into a Configuration: the bearer token, or the certificate
    files (written once, replaced in place when the plugin gives a new pair)."""

    def __init__(self, source: ExecCredentialSource) -> None:
        self.source = source
        self._lock = threading.Lock()  # guards _applied, _files
        self._applied: ExecCredential | None = None
        self._files: tempfile.TemporaryDirectory[str] | None = None

    def refresh(self, configuration: Any) -> None:
        credential = self.source.refresh()
        if credential is not None:
            self.apply(configuration, credential)

    def apply(self, configuration: Any, credential: ExecCredential) -> None:
        with self._lock:
            if credential is self._applied:
                return
            self._applied = credential
            if credential.token is not None:
                configuration.api_key = {"authorization": credential.token}
                configuration.api_key_prefix = {"authorization": "Bearer"}
                return
            if self._files is None:
                self._files = tempfile.TemporaryDirectory(prefix="kinformer-exec-")
            cert = os.path.join(self._files.name, "client.crt")
            key = os.path.join(self._files.name, "client.key")
            for path, data in ((cert, credential.client_certificate_data),
                               (key, credential.client_key_data)):
                _write_private(path, data or "")
            # read by the pools for every new connection: a new pair reaches the next one
            configuration.cert_file, configuration.key_file = cert, key

    def close(self) -> None:
        with self._lock:
            files, self._files = self._files, None
        if files is not None:
            files.cleanup()

    def __deepcopy__(self, memo: Any) -> _Credentials:
        return self

    def __repr__(self) -> str:
        return f"<credentials of {self.source.what}>"


def _write_private(path: str, data: str) -> None:
    """Write ``data`` to ``path`` readable by the owner alone, replacing it in one step."""
    staging = path + ".new"
    fd = os.open(staging, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as f:
        f.write(data)
    os.replace(staging, path)


@functools.cache
def _configuration_class() -> Any:
    """The official client's ``Configuration``, asking its credentials' source before each
    request's auth settings are read (made on first use: ``import kinformer`` loads no client)."""
    from kubernetes import client

    class ExecConfiguration(client.Configuration):
        """A ``Configuration`` whose credential comes from an exec plugin, refreshed on use."""

        kinformer_credentials: _Credentials | None = None

        def auth_settings(self) -> Any:
            if self.kinformer_credentials is not None:
                self.kinformer_credentials.refresh(self)
            return super().auth_settings()

    return ExecConfiguration
