"""kinformer's own connection pool (kinformer.client.pool), built from the caller's Configuration.

The caller's ApiClient is left as it was and never carries kinformer's requests; the pool takes
the Configuration's TLS, proxy and socket settings, is shared by every request path of one
ApiClient, and closes its connections when asked or when the ApiClient is gone. What a test
needs to see of the wire (connections opened and closed, a proxy's request line, a client
certificate) is served by small stdlib servers on loopback; the rest runs against
FakeAPIServer.
"""

from __future__ import annotations

import datetime
import gc
import http.server
import ipaddress
import json
import socket
import ssl
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import kubernetes
import pytest
import urllib3
from helpers import running

from kinformer import (
    GroupVersionResource,
    KubeconfigContextsProvider,
    ListWatch,
    SharedIndexInformer,
    errors,
)
from kinformer.client import pool, rest
from kinformer.context import Context
from kinformer.testing import FakeAPIServer, wait_for

CONFIGMAPS = GroupVersionResource("", "v1", "configmaps")
TIMEOUT = 10.0
NAMESPACES = json.dumps({"kind": "NamespaceList", "apiVersion": "v1", "metadata": {},
                         "items": []}).encode()


class KeepAliveServer:
    """Answers every GET with an empty NamespaceList over kept-alive HTTP/1.1 connections.

    Counts the connections opened and those closed by the client, and records each request
    line and its headers: pointed at as a proxy, it answers in the server's place.
    """

    def __init__(self, tls: ssl.SSLContext | None = None) -> None:
        owner = self

        class Handler(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def setup(self) -> None:
                super().setup()
                with owner.lock:
                    owner.opened += 1

            def finish(self) -> None:
                super().finish()
                with owner.lock:
                    owner.closed += 1

            def do_GET(self) -> None:
                peer = self.connection.getpeercert() if tls is not None else None
                with owner.lock:
                    owner.requests.append((self.requestline, dict(self.headers), peer))
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(NAMESPACES)))
                self.end_headers()
                self.wfile.write(NAMESPACES)

            def log_message(self, *args: Any) -> None:
                pass

        self.lock = threading.Lock()  # guards opened, closed, requests
        self.opened = 0
        self.closed = 0
        self.requests: list[tuple[str, dict[str, str], Any]] = []
        self._server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        if tls is not None:
            self._server.socket = tls.wrap_socket(self._server.socket, server_side=True)
        self._thread = threading.Thread(target=self._server.serve_forever, name="test-keepalive")
        self._thread.start()
        scheme = "https" if tls is not None else "http"
        self.url = f"{scheme}://127.0.0.1:{self._server.server_address[1]}"

    def close(self) -> None:
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(TIMEOUT)


@pytest.fixture
def keepalive() -> Iterator[KeepAliveServer]:
    server = KeepAliveServer()
    yield server
    server.close()


def configuration_for(url: str, **settings: Any) -> Any:
    configuration = kubernetes.client.Configuration()
    configuration.host = url
    for name, value in settings.items():
        setattr(configuration, name, value)
    return configuration


def test_the_callers_api_client_is_left_as_it_was_and_carries_no_request_of_kinformer(
    apiserver: FakeAPIServer, api_client: Any
) -> None:
    official = api_client.rest_client
    manager = official.pool_manager
    classes = manager.pool_classes_by_scheme
    informer = SharedIndexInformer(ListWatch.for_resource(api_client, CONFIGMAPS))
    with running(informer.run):
        assert informer.wait_for_sync(timeout=TIMEOUT)
        assert rest.Client(api_client).get_json("/api/v1/namespaces")["kind"] == "NamespaceList"
    assert api_client.rest_client is official and official.pool_manager is manager
    assert manager.pool_classes_by_scheme is classes
    assert classes == urllib3.poolmanager.pool_classes_by_scheme
    assert len(manager.pools) == 0  # no pool made: no request went through it
    core = kubernetes.client.CoreV1Api(api_client)
    assert core.list_namespace().kind == "NamespaceList"  # the client's own requests as ever
    assert len(manager.pools) == 1


def test_the_request_paths_of_one_api_client_share_one_pool_of_their_own(
    keepalive: KeepAliveServer,
) -> None:
    api = kubernetes.client.ApiClient(configuration_for(keepalive.url))
    try:
        rest.Client(api).get_json("/api/v1/namespaces")  # on kinformer's connection
        core = kubernetes.client.CoreV1Api(api)
        core.list_namespace()  # on the client's own
        rest.Client(core).get_json("/api/v1/namespaces")  # another path of the same ApiClient
        assert keepalive.opened == 2
        assert len(keepalive.requests) == 3
    finally:
        api.close()


def test_closing_or_dropping_the_api_client_closes_kinformers_connections(
    keepalive: KeepAliveServer,
) -> None:
    api = kubernetes.client.ApiClient(configuration_for(keepalive.url))
    rest.Client(api).get_json("/api/v1/namespaces")
    pool.close(api)
    assert wait_for(lambda: keepalive.closed == 1, TIMEOUT)
    rest.Client(api).get_json("/api/v1/namespaces")  # a later request opens a new one
    assert keepalive.opened == 2
    del api
    gc.collect()
    assert wait_for(lambda: keepalive.closed == 2, TIMEOUT)


def test_a_token_refreshed_by_the_configurations_hook_is_sent_with_every_request() -> None:
    with FakeAPIServer(token="fresh") as server:
        configuration = configuration_for(server.url, ssl_ca_cert=server.ca_file,
                                          api_key={"authorization": "stale"},
                                          api_key_prefix={"authorization": "Bearer"})
        refreshed: list[str] = []

        def refresh(config: Any) -> None:
            config.api_key = {"authorization": "fresh"}
            refreshed.append("fresh")

        configuration.refresh_api_key_hook = refresh
        api = kubernetes.client.ApiClient(configuration)
        try:
            client = rest.Client(api)
            for _ in range(2):
                assert client.get_json("/api/v1/namespaces")["kind"] == "NamespaceList"
        finally:
            api.close()
    assert refreshed == ["fresh", "fresh"]


@pytest.mark.filterwarnings("ignore::urllib3.exceptions.InsecureRequestWarning")
def test_verify_ssl_off_trusts_any_certificate() -> None:
    with FakeAPIServer(token="s3cret") as server:
        api = kubernetes.client.ApiClient(configuration_for(
            server.url, verify_ssl=False, api_key={"authorization": "Bearer s3cret"}))
        try:
            assert rest.Client(api).get_json("/api/v1/namespaces")["kind"] == "NamespaceList"
        finally:
            api.close()


def test_the_tls_server_name_is_the_name_the_certificate_must_hold() -> None:
    with FakeAPIServer(token="s3cret") as server:
        for name, works in (("localhost", True), ("elsewhere.example", False)):
            api = kubernetes.client.ApiClient(configuration_for(
                server.url, ssl_ca_cert=server.ca_file, tls_server_name=name,
                api_key={"authorization": "Bearer s3cret"}))
            try:
                client = rest.Client(api)
                if works:
                    assert client.get_json("/api/v1/namespaces")["kind"] == "NamespaceList"
                else:
                    with pytest.raises(errors.TransportError, match=r"TLS failure.*elsewhere\.example"):
                        client.get_json("/api/v1/namespaces")
            finally:
                api.close()


def test_the_configurations_socket_options_are_set_on_each_connection(
    apiserver: FakeAPIServer,
) -> None:
    options = [*urllib3.connection.HTTPConnection.default_socket_options,
               (socket.SOL_SOCKET, socket.SO_KEEPALIVE, 1)]
    api = kubernetes.client.ApiClient(configuration_for(apiserver.url, socket_options=options))
    try:
        response = rest.Client(api).request("GET", "/api/v1/configmaps", query=[("watch", "true")])
        try:
            sock = response._raw.connection.sock
            assert sock.getsockopt(socket.SOL_SOCKET, socket.SO_KEEPALIVE) == 1
        finally:
            response.release()
    finally:
        api.close()


def test_requests_go_through_the_configurations_proxy_with_its_headers(
    apiserver: FakeAPIServer, keepalive: KeepAliveServer,
) -> None:
    api = kubernetes.client.ApiClient(configuration_for(
        apiserver.url, proxy=keepalive.url, proxy_headers={"Proxy-Authorization": "Basic cHJveHk="}))
    try:
        assert rest.Client(api).get_json("/api/v1/namespaces")["kind"] == "NamespaceList"
    finally:
        api.close()
    [(line, headers, _)] = keepalive.requests
    assert line == f"GET {apiserver.url}/api/v1/namespaces HTTP/1.1"  # the whole URL, to a proxy
    assert headers["Proxy-Authorization"] == "Basic cHJveHk="
    assert [path for _, path, _, _ in apiserver.requests] == []


def test_a_host_no_proxy_names_goes_around_the_proxy(
    apiserver: FakeAPIServer, keepalive: KeepAliveServer,
) -> None:
    api = kubernetes.client.ApiClient(configuration_for(
        apiserver.url, proxy=keepalive.url, no_proxy="localhost,127.0.0.1"))
    try:
        assert rest.Client(api).get_json("/api/v1/namespaces")["kind"] == "NamespaceList"
    finally:
        api.close()
    assert keepalive.requests == []
    assert [path for _, path, _, _ in apiserver.requests] == ["/api/v1/namespaces"]


# -- a client certificate ------------------------------------------------------------------------


def _certificates(directory: Path) -> dict[str, str]:
    """A CA, a server certificate for 127.0.0.1 and a client certificate, as PEM files."""
    x509 = pytest.importorskip("cryptography.x509")
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

    now = datetime.datetime.now(datetime.timezone.utc)
    ca_key = ec.generate_private_key(ec.SECP256R1())
    ca_name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "test-ca")])

    def signed(name: x509.Name, key: Any, extensions: list[Any]) -> Any:
        builder = (x509.CertificateBuilder().subject_name(name).issuer_name(ca_name)
                   .public_key(key.public_key()).serial_number(x509.random_serial_number())
                   .not_valid_before(now - datetime.timedelta(minutes=5))
                   .not_valid_after(now + datetime.timedelta(hours=1)))
        for extension, critical in extensions:
            builder = builder.add_extension(extension, critical=critical)
        return builder.sign(ca_key, hashes.SHA256())

    ca = signed(ca_name, ca_key, [(x509.BasicConstraints(ca=True, path_length=0), True)])
    files = {"ca": ca}
    for role, usage, extra in (
        ("server", ExtendedKeyUsageOID.SERVER_AUTH,
         [(x509.SubjectAlternativeName([x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]), False)]),
        ("client", ExtendedKeyUsageOID.CLIENT_AUTH, []),
    ):
        key = ec.generate_private_key(ec.SECP256R1())
        files[role] = signed(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, f"test-{role}")]),
                             key, [(x509.ExtendedKeyUsage([usage]), False), *extra])
        (directory / f"{role}-key.pem").write_bytes(key.private_bytes(
            serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption()))
    paths = {}
    for role, cert in files.items():
        path = directory / f"{role}.pem"
        path.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
        paths[role] = str(path)
    paths["server-key"] = str(directory / "server-key.pem")
    paths["client-key"] = str(directory / "client-key.pem")
    return paths


def test_the_configurations_client_certificate_is_presented(tmp_path: Path) -> None:
    paths = _certificates(tmp_path)
    tls = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH, cafile=paths["ca"])
    tls.verify_mode = ssl.CERT_REQUIRED
    tls.load_cert_chain(paths["server"], paths["server-key"])
    server = KeepAliveServer(tls)
    try:
        api = kubernetes.client.ApiClient(configuration_for(
            server.url, ssl_ca_cert=paths["ca"], cert_file=paths["client"],
            key_file=paths["client-key"]))
        try:
            assert rest.Client(api).get_json("/api/v1/namespaces")["kind"] == "NamespaceList"
        finally:
            api.close()
    finally:
        server.close()
    [(_, _, peer)] = server.requests
    assert dict(pair[0] for pair in peer["subject"])["commonName"] == "test-client"


def test_a_kubeconfig_contexts_provider_closes_kinformers_connections_when_its_run_ends(
    keepalive: KeepAliveServer, tmp_path: Path,
) -> None:
    path = tmp_path / "kubeconfig"
    path.write_text(json.dumps({
        "apiVersion": "v1", "kind": "Config", "current-context": "only",
        "clusters": [{"name": "only", "cluster": {"server": keepalive.url}}],
        "users": [{"name": "only", "user": {}}],
        "contexts": [{"name": "only", "context": {"cluster": "only", "user": "only"}}]}))
    provider = KubeconfigContextsProvider(str(path))
    engaged: list[Any] = []  # kept alive here: its connections must close anyway

    def engage(name: str, api_client: Any) -> None:
        engaged.append(api_client)
        rest.Client(api_client).get_json("/api/v1/namespaces")

    stop = Context()
    thread = threading.Thread(target=provider.run, args=(stop, engage, lambda name: None),
                              name="test-provider")
    thread.start()
    assert wait_for(lambda: len(keepalive.requests) == 1, TIMEOUT)
    assert keepalive.closed == 0  # kept alive while the cluster is engaged
    stop.cancel()
    thread.join(TIMEOUT)
    assert wait_for(lambda: keepalive.closed == 1, TIMEOUT)
    assert len(engaged) == 1
