"""The client ``kinformer watch`` talks through: a kubeconfig, a pod's service account, or an
embedded server.

:func:`connect` yields an ``ApiClient``, the default namespace and the server's URL, and closes
the client (and stops an embedded server) afterwards. A kubeconfig is chosen as kubectl chooses
it (``--kubeconfig``, else ``$KUBECONFIG``, else ``~/.kube/config``), and in a pod without one
the service account is used. What cannot be read raises
:class:`~kinformer.cli.watch.exits.CommandError` with :data:`~kinformer.cli.watch.exits.EXIT_CONFIG`
and one line saying why.
"""

from __future__ import annotations

import os
import sys
import tempfile
import urllib.parse
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from kinformer import context
from kinformer.cli.watch.exits import EXIT_CONFIG, EXIT_USAGE, CommandError
from kinformer.gvr import GroupVersionResource
from kinformer.testing import apiserver

SERVICE_ACCOUNT_DIR = "/var/run/secrets/kubernetes.io/serviceaccount"  # a pod's token, CA, namespace
EMBEDDED_SEED = {  # namespace -> ConfigMap names seeded in an --embedded server
    "default": ("app-config", "feature-flags", "routing"),
    "kube-system": ("coredns", "kube-proxy"),
}


@contextmanager
def connect(kubeconfig: str | None, context_name: str | None, embedded: bool,
            ctx: context.Context | None = None,
            timeout: float | None = None) -> Iterator[tuple[Any, str, str]]:
    """``(api_client, default namespace, server URL)`` for the kubeconfig or an embedded server.

    A credential plugin still running when ``ctx`` is cancelled is killed: that is a
    :class:`CommandError` saying it did not finish within ``timeout`` seconds."""
    from kubernetes import client

    if embedded:
        if kubeconfig or context_name:
            raise CommandError(EXIT_USAGE, "--embedded cannot be combined with --kubeconfig or --context")
        with embedded_server() as server:
            embedded_api = server.api_client()
            try:
                yield embedded_api, "default", server.url
            finally:
                embedded_api.close()
        return
    configuration = client.Configuration()
    default_namespace = load_kubeconfig(kubeconfig, context_name, configuration, ctx, timeout)
    api: Any = client.ApiClient(configuration)
    try:
        yield api, default_namespace, str(configuration.host)
    finally:
        api.close()


def load_kubeconfig(path: str | None, context_name: str | None, configuration: Any,
                    ctx: context.Context | None = None, timeout: float | None = None) -> str:
    """Load ``path`` (``context_name``) into ``configuration``; returns the context's namespace.

    A credential plugin still running when ``ctx`` is cancelled is killed
    (:func:`plugin_timeout`)."""
    from kubernetes.config.config_exception import ConfigException

    from kinformer.clusters import credentials

    # --kubeconfig, else $KUBECONFIG (its files merged) or ~/.kube/config, as kubectl
    config_file = path or os.environ.get("KUBECONFIG") or "~/.kube/config"
    shown = config_file
    if in_a_pod_without_kubeconfig(path, context_name):
        return load_in_cluster(configuration)
    if path and not os.path.exists(path):
        raise CommandError(EXIT_CONFIG, f"kubeconfig {shown} does not exist")
    if not context_name:  # kubectl's: the first file that names one, not the official client's last
        context_name = current_context(path)
    try:
        merger = credentials.merged(config_file)
        if merger.config is None:
            raise ConfigException("Invalid kube-config file. No configuration found.")
        contexts = [c.value if hasattr(c, "value") else c for c in merger.config["contexts"]]
    except (ConfigException, OSError) as err:
        raise CommandError(EXIT_CONFIG, f"cannot use kubeconfig {shown}: {one_line(err)}") from None
    except Exception as err:  # not YAML, or YAML of another shape: the loader raises anything
        reason = _not_a_mapping(config_file) or one_line(err)
        raise CommandError(EXIT_CONFIG, f"kubeconfig {shown} is not a valid kubeconfig: {reason}") from None
    names = [str(c.get("name")) for c in contexts or () if isinstance(c, dict)]
    if not context_name:
        raise CommandError(EXIT_CONFIG, f"kubeconfig {shown} has no current context; name one with "
                                        f"--context (it has: {', '.join(names) or 'none'})")
    if context_name not in names:
        raise CommandError(EXIT_CONFIG, f'kubeconfig {shown} has no context "{context_name}"; '
                                        f"it has: {', '.join(names) or 'none'}")
    configuration.host = ""  # the loader sets it only from a server: none stays empty
    try:
        credentials.load_context(merger, str(context_name), configuration, ctx)
    except credentials.PluginStopped as err:
        raise plugin_timeout(err.command, err.user, timeout) from None
    except credentials.CredentialsError as err:
        raise CommandError(EXIT_CONFIG, f"kubeconfig {shown}: {one_line(err)}") from None
    except (ConfigException, OSError) as err:
        raise CommandError(EXIT_CONFIG, f"cannot use kubeconfig {shown}: {one_line(err)}") from None
    except Exception as err:
        raise CommandError(EXIT_CONFIG, f"kubeconfig {shown} is not a valid kubeconfig: "
                                        f"{one_line(err)}") from None
    chosen = next((c for c in contexts if isinstance(c, dict) and c.get("name") == context_name), None)
    body = (chosen or {}).get("context") or {}
    problem = server_problem(configuration.host, body.get("cluster"))
    if problem:
        raise CommandError(EXIT_CONFIG, f"kubeconfig {shown}: {problem}")
    return str(body.get("namespace") or "default")


def server_problem(host: object, cluster_name: object) -> str | None:
    """What is wrong with the server URL ``host`` a context's cluster ``cluster_name`` gave
    (none given: the loader leaves it empty), or None when it is an http(s) URL with a host."""
    text = str(host or "")
    if not text:
        return f'cluster "{cluster_name}" has no server'
    parts = urllib.parse.urlsplit(text)
    if parts.scheme not in ("http", "https") or not parts.netloc:
        return f'cluster "{cluster_name}" has no server URL: "{text}" is not http:// or https://HOST'
    return None


def plugin_timeout(command: str, user: str, timeout: float | None) -> CommandError:
    """The error of a credential plugin that was killed unfinished at ``--timeout``."""
    within = f" within {timeout:g}s" if timeout is not None else ""
    return CommandError(EXIT_CONFIG, f"credential plugin {command} of user {user} did not finish{within}")


def kubeconfig_files(path: str | None) -> list[str]:
    """The files a kubeconfig is read from, in order: ``path``, else those ``$KUBECONFIG``
    lists (:data:`os.pathsep` between them, empty entries skipped), else ``~/.kube/config``."""
    if path:
        return [path]
    listed = os.environ.get("KUBECONFIG") or ""
    return [os.path.expanduser(entry) for entry in listed.split(os.pathsep) if entry] or [
        os.path.expanduser("~/.kube/config")]


def current_context(path: str | None) -> str | None:
    """The current context as kubectl picks it: the first of :func:`kubeconfig_files` that sets
    a non-empty ``current-context`` (a later file never overrides it); None when none does.
    Only the YAML is read: no credentials are loaded, no plugin runs."""
    for document in _documents(path):
        name = document.get("current-context")
        if isinstance(name, str) and name:
            return name
    return None


def context_namespace(path: str | None, context_name: str | None) -> str:
    """The namespace of context ``context_name`` (the first file's of that name), else
    ``default``. Only the YAML is read: no credentials are loaded, no plugin runs."""
    for document in _documents(path):
        for entry in _entries(document, "contexts"):
            if entry.get("name") == context_name:
                body = entry.get("context")
                namespace = body.get("namespace") if isinstance(body, dict) else None
                return namespace if isinstance(namespace, str) and namespace else "default"
    return "default"


def credential_plugin(path: str | None, context_name: str) -> tuple[str, str] | None:
    """``(command, user)`` of the credential plugin context ``context_name`` runs, if it runs
    one; each entry from the first file that names it, as the files merge. YAML only."""
    documents = list(_documents(path))
    user_name = next((entry["context"].get("user") for document in documents
                      for entry in _entries(document, "contexts")
                      if entry.get("name") == context_name and isinstance(entry.get("context"), dict)),
                     None)
    user = next((entry.get("user") for document in documents for entry in _entries(document, "users")
                 if user_name is not None and entry.get("name") == user_name), None)
    plugin = user.get("exec") if isinstance(user, dict) else None
    if not isinstance(plugin, dict) or not plugin.get("command"):
        return None
    return str(plugin["command"]), str(user_name)


def _entries(document: dict[str, Any], kind: str) -> list[dict[str, Any]]:
    """The named entries of ``document[kind]`` (clusters, users, contexts) that are mappings."""
    listed = document.get(kind)
    return [entry for entry in listed if isinstance(entry, dict)] if isinstance(listed, list) else []


def _documents(path: str | None) -> Iterator[dict[str, Any]]:
    """The YAML mapping of each readable file of :func:`kubeconfig_files`, in order."""
    import yaml

    for file in kubeconfig_files(path):
        try:
            with open(file, encoding="utf-8") as text:
                document = yaml.safe_load(text)
        except (OSError, ValueError, yaml.YAMLError):
            continue  # the loader says what is wrong with it
        if isinstance(document, dict):
            yield document


def _not_a_mapping(config_file: str | None) -> str | None:
    """Why ``config_file`` cannot be a kubeconfig when its YAML is no mapping (the loader then
    fails with a message about its own code); None when it is one, or cannot be told."""
    if config_file is None or os.pathsep in config_file:
        return None
    try:
        import yaml

        with open(config_file, encoding="utf-8") as text:
            document = yaml.safe_load(text)
    except Exception:
        return None
    if isinstance(document, dict):
        return None
    return (f"it holds {type(document).__name__ if document is not None else 'nothing'}, not a "
            "mapping with clusters, contexts and users")


def in_a_pod_without_kubeconfig(path: str | None, context_name: str | None) -> bool:
    """Whether to use the pod's service account: kubectl's rule when no kubeconfig is given.

    That is: no ``--kubeconfig`` or ``--context``, no ``$KUBECONFIG``, no ``~/.kube/config``,
    and ``$KUBERNETES_SERVICE_HOST`` set (the kubelet sets it in every pod).
    """
    return (
        not path
        and not context_name
        and not os.environ.get("KUBECONFIG")
        and not os.path.exists(os.path.expanduser("~/.kube/config"))
        and bool(os.environ.get("KUBERNETES_SERVICE_HOST"))
    )


def load_in_cluster(configuration: Any) -> str:
    """Load the pod's service account into ``configuration``; returns the pod's namespace.

    The token file is read again every minute (the kubelet rotates it).
    """
    from kubernetes.config import incluster_config
    from kubernetes.config.config_exception import ConfigException

    in_cluster: Any = incluster_config  # untyped
    loader = in_cluster.InClusterConfigLoader(
        token_filename=os.path.join(SERVICE_ACCOUNT_DIR, "token"),
        cert_filename=os.path.join(SERVICE_ACCOUNT_DIR, "ca.crt"),
    )
    try:
        loader.load_and_set(configuration)
    except (ConfigException, OSError) as err:
        raise CommandError(
            EXIT_CONFIG, f"cannot use the pod's service account: {one_line(err)}"
        ) from None
    try:
        with open(os.path.join(SERVICE_ACCOUNT_DIR, "namespace"), encoding="utf-8") as f:
            return f.read().strip() or "default"
    except OSError:
        return "default"


@contextmanager
def embedded_server() -> Iterator[Any]:
    """A started FakeAPIServer seeded with :data:`EMBEDDED_SEED`; its kubeconfig path on stderr."""
    configmaps = GroupVersionResource("", "v1", "configmaps")
    with apiserver.FakeAPIServer() as server, tempfile.TemporaryDirectory(prefix="kinformer-watch-") as tmp:
        for namespace, names in EMBEDDED_SEED.items():
            server.bulk_create(configmaps, [
                {"metadata": {"name": name, "namespace": namespace, "labels": {"seeded": "true"}},
                 "data": {"key": name}}
                for name in names
            ])
        path = server.write_kubeconfig(os.path.join(tmp, "kubeconfig"))
        print(f"embedded API server at {server.url} (kubeconfig: {path})", file=sys.stderr, flush=True)
        yield server


def one_line(err: BaseException) -> str:
    """The whole message of ``err`` on one line (a YAML error spans several)."""
    text = str(err).strip() or type(err).__name__
    return " ".join(line.strip() for line in text.splitlines() if line.strip())
