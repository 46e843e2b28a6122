"""Loading one context of a kubeconfig, its credential plugin bounded: for ``kinformer watch``
and for :class:`~kinformer.KubeconfigContextsProvider`'s member clusters.

The official client's loader runs a user's ``exec`` credential plugin and waits for it without
a timeout, on whichever thread loads the kubeconfig: a plugin that hangs (a login prompt nobody
answers, a cloud CLI without network) would hold a command past ``--timeout`` and Ctrl-C, and a
provider's other members behind it. :func:`load_context` loads a context with the official
loader, except that the plugin is run here: its process is killed as soon as ``ctx`` is
cancelled (a timeout passed, Ctrl-C, a stop), and :class:`PluginStopped` says so. No thread is
started for it; the thread that loads waits on the process in short steps. A credential
refreshed later (an ``expirationTimestamp`` passed) runs the plugin here too, waited for as the
official loader waits for it (as long as it runs); one that fails then is logged at ERROR, its
stderr line redacted (the official loader logs its whole stderr), and the last credential is
kept, as the official loader keeps it.

A plugin that fails or gives no credential, and a context naming a user the kubeconfig lacks,
raise :class:`CredentialsError`, where the official loader logs and goes on without
credentials: kubectl refuses both.
"""

from __future__ import annotations

import contextlib
import json
import logging
import subprocess
import sys
import threading
from collections.abc import Iterator
from typing import Any

from kubernetes.config import kube_config as _kube_config

from kinformer import context, errors
from kinformer.clusters import exec_credential

kube_config: Any = _kube_config  # untyped
log = logging.getLogger(__name__)
PLUGIN_POLL = 0.05  # seconds between looks at ctx while a credential plugin runs
KILL_WAIT = 1.0  # seconds to collect a killed plugin's output (a child of its own may hold it)


class CredentialsError(Exception):
    """A context's credentials cannot be had: its user is missing, or its plugin failed. The
    message names the user and plugin, never a credential (it is redacted)."""

    def __init__(self, message: str) -> None:
        super().__init__(errors.redact(message))


class PluginStopped(Exception):
    """The credential plugin ``command`` of user ``user`` was killed: its ``ctx`` was cancelled."""

    def __init__(self, command: str, user: str) -> None:
        super().__init__(f"credential plugin {command} of user {user} was stopped")
        self.command = command
        self.user = user


@contextlib.contextmanager
def attempt(seconds: float, parent: context.Context | None = None,
            name: str = "credentials") -> Iterator[context.Context]:
    """A context for one load (a child of ``parent``, if given), cancelled after ``seconds``
    (which kills a plugin still running: :class:`PluginStopped`) and when the block ends."""
    ctx = parent.child(name) if parent is not None else context.Context(name)
    timer = threading.Timer(seconds, ctx.cancel)
    timer.daemon = True
    timer.start()
    try:
        yield ctx
    finally:
        timer.cancel()
        ctx.cancel()


def merged(config_file: str) -> Any:
    """The official client's merge of ``config_file`` (one path, or several joined by
    :data:`os.pathsep`): its ``config`` node and the merger (None without a configuration)."""
    return kube_config.KubeConfigMerger(config_file)


def load_context(merger: Any, context_name: str | None, configuration: Any,
                 ctx: context.Context | None = None, persist: bool = True,
                 interactive: bool | None = None) -> None:
    """Load context ``context_name`` (None: the current one) of ``merger``'s configuration into
    ``configuration``;
    a credential plugin still running when ``ctx`` is cancelled is killed
    (:class:`PluginStopped`). The loader's own errors pass through. ``persist``: a refreshed
    credential (an auth provider's) is written back to its file, as the official loader does.
    ``interactive``: whether a plugin may use the terminal (None: when stdout is one)."""
    loader = _Loader(ctx, interactive, config_dict=merger.config, active_context=context_name,
                     config_base_path=None, config_persister=merger.save_changes if persist else None)
    if loader.user_name and loader._user is None:  # the official loader goes on anonymously
        raise CredentialsError(f'context "{context_name}" names user "{loader.user_name}", which '
                               "the kubeconfig does not have")
    try:
        loader.load_and_set(configuration)
    finally:
        loader.ctx = None  # a later refresh waits for the plugin as the official loader does


class _Loader(kube_config.KubeConfigLoader):  # type: ignore[misc]  # untyped base
    """The official loader, with the credential plugin run by :func:`run_plugin`."""

    def __init__(self, ctx: context.Context | None, interactive: bool | None, **kwargs: Any) -> None:
        self.ctx = ctx
        self.interactive = interactive
        super().__init__(**kwargs)

    def _load_from_exec_plugin(self) -> bool | None:
        if "exec" not in self._user:
            return None
        base_path = self._get_base_path(self._cluster.path)
        exec_config = self._user["exec"]
        command = str(exec_config.safe_get("command"))
        refresh = self.ctx is None  # after the start: waited for as the official loader waits
        try:
            status = run_plugin(kube_config.ExecProvider(exec_config, base_path, self._cluster),
                                self.ctx or context.Context("credentials-refresh"), command,
                                self.user_name, self.interactive)
            if not self._use(status, base_path):
                raise CredentialsError(f"credential plugin {command} of user {self.user_name} gave "
                                       "neither a token nor a client certificate and key")
        except CredentialsError as err:
            if not refresh:
                raise
            # the official loader logs the plugin's whole stderr here, and goes on with the
            # credential it had: so does this, with the line redacted, that credential too
            held = str(getattr(self, "token", "") or "").removeprefix("Bearer ")
            log.error("%s; the last credential is kept", errors.redact(str(err), [held]))
            return None
        return True

    @property
    def user_name(self) -> str:
        return str(self._current_context["context"].safe_get("user") or "")

    def _use(self, status: dict[str, Any], base_path: str) -> bool | None:
        """Take the credential of a plugin's ``status``, as the official loader takes it."""
        if "token" in status:
            self.token = f"Bearer {status['token']}"
        elif "clientCertificateData" in status:
            if "clientKeyData" not in status:
                return None
            for attribute, key in (("cert_file", "clientCertificateData"), ("key_file", "clientKeyData")):
                setattr(self, attribute, kube_config.FileOrData(
                    status, None, data_key_name=key, file_base_path=base_path,
                    base64_file_content=False, temp_file_path=self._temp_file_path).as_file())
        else:
            return None
        if "expirationTimestamp" in status:
            self.expiry = kube_config.parse_rfc3339(status["expirationTimestamp"])
        return True


def run_plugin(provider: Any, ctx: context.Context, command: str, user: str,
               interactive: bool | None = None) -> dict[str, Any]:
    """Run the plugin ``provider`` (an official ``ExecProvider``) as it runs itself, but killed
    once ``ctx`` is cancelled (:class:`PluginStopped`); its ``status``. A plugin that cannot
    start, fails or answers no ExecCredential raises :class:`CredentialsError` (the official
    loader logs it and goes on without credentials, as kubectl does not). ``interactive``:
    whether it may use the terminal (None: when stdout is one)."""
    plugin = f"credential plugin {command} of user {user}"
    if interactive is None:
        interactive = hasattr(sys.stdout, "isatty") and sys.stdout.isatty()
    info: dict[str, Any] = {"apiVersion": provider.api_version, "kind": "ExecCredential",
                            "spec": {"interactive": interactive}}
    if provider.cluster:
        info["spec"]["cluster"] = provider.cluster.value
        for extension in provider.cluster.value.get("extensions") or ():
            if extension.get("name") == "client.authentication.k8s.io/exec":
                info["spec"]["cluster"]["config"] = extension.get("extension")
                break
    env = dict(provider.env, KUBERNETES_EXEC_INFO=json.dumps(info))
    try:
        process = subprocess.Popen(
            provider.args, stdout=subprocess.PIPE,
            stderr=sys.stderr if interactive else subprocess.PIPE,
            stdin=sys.stdin if interactive else subprocess.DEVNULL,
            cwd=provider.cwd, env=env, text=True)
    except OSError as err:
        raise CredentialsError(f"{plugin} cannot run: {err.strerror or err}") from None
    while True:
        try:
            stdout, stderr = process.communicate(timeout=PLUGIN_POLL)
            break
        except subprocess.TimeoutExpired:
            if ctx.cancelled():
                _kill(process)
                raise PluginStopped(command, user) from None
    if process.returncode != 0:  # its stderr says why (its stdout, which may hold a token, never shows)
        said = exec_credential.plugin_said(stderr, stdout)
        reason = f": {said}" if said else ""
        raise CredentialsError(f"{plugin} failed with exit status {process.returncode}{reason}")
    try:
        data = json.loads(stdout)
        status = data["status"] if data.get("apiVersion") == provider.api_version else None
    except (ValueError, KeyError, TypeError, AttributeError):
        status = None
    if not isinstance(status, dict):
        raise CredentialsError(f"{plugin} answered no ExecCredential of {provider.api_version}")
    return status


def _kill(process: subprocess.Popen[str]) -> None:
    """Kill ``process`` and reap it; its pipes are closed whatever a child of its own holds."""
    process.kill()
    try:
        process.communicate(timeout=KILL_WAIT)
    except subprocess.TimeoutExpired:
        for stream in (process.stdout, process.stderr):
            if stream is not None:
                stream.close()
        process.wait()

