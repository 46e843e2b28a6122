"""HTTP request handling of the fake API server: routing, verbs, list and watch responses.

One :class:`Handler` per connection (HTTP/1.1 keep-alive) on the server's connection thread.
Paths route to discovery documents (:mod:`.discovery`) or to resource requests, parsed and
checked by :mod:`.request`, which become calls on
:class:`~kinformer.testing._apiserver.storage.storage.Storage` on behalf of the request's field
manager (:mod:`~kinformer.testing._apiserver.registry.fieldmanager`); the fault switches of
:class:`~kinformer.testing._apiserver.server_state.ServerState` apply first, and errors become
``Status`` bodies. With logical clusters on, a path may start ``/clusters/<name>`` or
``/clusters/*`` (:mod:`~kinformer.testing._apiserver.clusters`): the rest is served in that
logical cluster, or across them for list and watch. Reads answer in the form ``Accept``
negotiates (:mod:`.mediatypes`: the object, a Table, PartialObjectMetadata), written by
:mod:`.responses`. Watch responses are chunked JSON lines, one event per line, fed from the
watcher's own queue, so the connection thread is the only one that waits on a slow client. A
Pod's ``exec``, ``attach`` and ``portforward`` are checked and refused as
:mod:`~kinformer.testing._apiserver.registry.connect` says.
"""

from __future__ import annotations

import contextlib
import hmac
import http.server
import logging
from typing import Any
from urllib.parse import parse_qs, urlsplit

from kinformer import errors
from kinformer.cache import labels as labelsel
from kinformer.testing._apiserver import clusters, records, resources, server_state, status
from kinformer.testing._apiserver.clusters import ROOT, WILDCARD
from kinformer.testing._apiserver.registry import connect, fieldmanager, scale, tokens
from kinformer.testing._apiserver.resources import ResourceType
from kinformer.testing._apiserver.status import StatusError
from kinformer.testing._apiserver.storage import watchers
from kinformer.testing._apiserver.wire import (
    discovery,
    mediatypes,
    openapi,
    responses,
    shards,
    tables,
    watchstream,
)
from kinformer.testing._apiserver.wire import patch as patches
from kinformer.testing._apiserver.wire import request as parsing
from kinformer.testing._apiserver.wire.request import Request

log = logging.getLogger(__name__)
log.addFilter(errors.REDACTING)  # a request's errors: none may quote a token


class Handler(http.server.BaseHTTPRequestHandler):
    """Serves one connection: requests one after another, a watch streams until it ends."""

    protocol_version = "HTTP/1.1"
    server_version = "kinformer-apiserver"
    sys_version = ""

    def log_message(self, format: str, *args: Any) -> None:
        log.debug("%s %s", self.address_string(), format % args)

    @property
    def state(self) -> server_state.ServerState:
        return self.server.state  # type: ignore[attr-defined, no-any-return]

    def do_GET(self) -> None:
        self._handle()

    def do_POST(self) -> None:
        self._handle()

    def do_PUT(self) -> None:
        self._handle()

    def do_PATCH(self) -> None:
        self._handle()

    def do_DELETE(self) -> None:
        self._handle()

    def do_HEAD(self) -> None:
        self._handle()

    def do_OPTIONS(self) -> None:
        self._handle()

    # ---- plumbing ----------------------------------------------------------------------------

    def _handle(self) -> None:
        url = urlsplit(self.path)
        query = {k: v[-1] for k, v in parse_qs(url.query, keep_blank_values=True).items()}
        self._code = 0
        self._streaming = False
        self._recorded = False
        self._query = query
        self._path = url.path
        self._cluster = ROOT
        try:
            body = self._read_body()
            self._authenticate()
            self._route(url.path, query, body)
        except StatusError as err:
            if not self._streaming:
                self._send(err.code, status.encode(err.body()), headers=err.headers())
        except OSError:
            self.close_connection = True
        except Exception:
            log.exception("internal error serving %s %s", self.command, url.path)
            if not self._streaming:
                self._send(500, status.encode(status.status_body(
                    500, "InternalError", "an internal error occurred", {})))
            self.close_connection = True
        finally:
            self._record(self._code)

    def _record(self, code: int) -> None:
        """Log the request once, before its response goes out (so a client never sees the
        answer of a request the log does not hold yet)."""
        self._code = code
        if not self._recorded:
            self._recorded = True
            self.state.record(self.command, self._path, self._query, code)

    def _read_body(self) -> bytes:
        try:
            return parsing.read_body(self.rfile, self.headers.get("Content-Length"),
                                     self.headers.get("Transfer-Encoding", ""))
        except StatusError:
            self.close_connection = True  # the stream is out of step with the framing
            raise

    def _authenticate(self) -> None:
        token = self.state.token
        if token is None:
            return
        given = self.headers.get("Authorization", "")
        scheme, _, value = given.partition(" ")
        if scheme.lower() != "bearer" or not hmac.compare_digest(value.strip().encode(), token):
            raise status.unauthorized()

    def _send(
        self, code: int, body: bytes, content_type: str = "application/json",
        headers: dict[str, str] | None = None,
    ) -> None:
        """Write a whole answer; ``body`` as it is (JSON bodies end with their newline)."""
        self._record(code)
        self.send_response(code)
        for name, value in (headers or {}).items():
            self.send_header(name, value)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(body)))
        self.send_header("Cache-Control", "no-cache, private")
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(body)

    def _send_obj(self, code: int, obj: Any) -> None:
        self._send(code, records.dumps(obj) + b"\n")

    # ---- routing -----------------------------------------------------------------------------

    def _route(self, path: str, query: dict[str, str], body: bytes) -> None:
        parts = [p for p in path.split("/") if p]
        if parts and parts[0] == clusters.PREFIX and self.state.storage.logical_clusters:
            # kcp's /clusters/<name>/...: the rest of the path as any server serves it
            self._cluster, parts = clusters.split_path(parts)
        if parts and parts[0] in ("healthz", "readyz", "livez"):
            self._send(200, b"ok", "text/plain; charset=utf-8")
            return
        if parts == ["version"]:
            self._send_obj(200, resources.version_info())
            return
        if parts[:2] == ["openapi", "v3"]:
            self._openapi(parts[2:])
            return
        if not parts or parts[0] not in ("api", "apis"):
            raise status.path_not_found()
        if len(parts) <= (2 if parts[0] == "api" else 3):  # a discovery document
            failure = self.state.take_discovery_failure("/" + "/".join(parts))
            if failure is not None:
                raise status.injected(failure.code, failure.retry_after)
        if parts[0] == "api":
            if len(parts) == 1:
                self._send_obj(200, discovery.api_versions(self.state.address))
                return
            if parts[1] != "v1":
                raise status.path_not_found()
            group, version, rest = "", "v1", parts[2:]
        else:
            if len(parts) == 1:
                self._send_obj(200, discovery.group_list(self._types()))
                return
            if len(parts) == 2:
                self._send_obj(200, discovery.group(self._types(), parts[1]))
                return
            group, version, rest = parts[1], parts[2], parts[3:]
        if not rest:
            self._send_obj(200, discovery.resource_list(self._types(), group, version))
            return
        self._resource_request(group, version, rest, query, body)

    def _types(self) -> list[ResourceType]:
        """The types served in the request's logical cluster (across them: in any)."""
        return self.state.storage.types(self._cluster)

    def _openapi(self, rest: list[str]) -> None:
        types = self._types()
        if not rest:
            self._send_obj(200, openapi.index(types))
            return
        doc = None
        if rest[0] == "api" and len(rest) == 2:
            doc = openapi.document(types, "", rest[1])
        elif rest[0] == "apis" and len(rest) == 3:
            doc = openapi.document(types, rest[1], rest[2])
        if doc is None:
            raise status.path_not_found()
        self._send_obj(200, doc)

    def _resource_request(
        self, group: str, version: str, rest: list[str], query: dict[str, str], body: bytes
    ) -> None:
        storage = self.state.storage
        cluster = self._cluster
        watch_path = rest[0] == "watch"
        if watch_path:
            rest = rest[1:]
        namespace = ""
        if len(rest) >= 3 and rest[0] == "namespaces":
            inner = storage.resolve(group, version, rest[2], cluster)
            if inner is not None and inner.namespaced:
                namespace, rest = rest[1], rest[2:]
        if not rest or len(rest) > 3:
            raise status.path_not_found()
        rt = storage.resolve(group, version, rest[0], cluster)
        if rt is None or (namespace and not rt.namespaced):
            raise status.path_not_found()
        name = rest[1] if len(rest) > 1 else ""
        sub = rest[2] if len(rest) > 2 else ""
        if rt.group_resource == "pods" and sub in connect.SUBRESOURCES and not watch_path:
            if cluster == WILDCARD:
                raise clusters.refuse_across("create" if self.command == "POST" else "get", rt)
            self._connect(Request(rt, namespace, name, sub, cluster), query)
            return
        if rt.group_resource == "pods" and sub == connect.LOG and not watch_path:
            if cluster == WILDCARD:
                raise clusters.refuse_across("get", rt)
            self._log(Request(rt, namespace, name, sub, cluster), query)
            return
        if sub and not (sub == "status" and rt.status) and (rt.group_resource, sub) not in (
                ("serviceaccounts", "token"), *((r, "scale") for r in resources.SCALABLE)):
            raise status.path_not_found()
        req = Request(rt, namespace, name, sub, cluster)
        verb = parsing.verb(self.command, req,
                            watch_path or bool(parsing.bool_option(query, "watch")))
        if cluster == WILDCARD and verb not in clusters.READ_ACROSS:
            raise clusters.refuse_across(verb, rt)
        delay = self.state.delay_for(verb)
        if delay > 0:
            self.state.stopping.wait(delay)
        if self.state.is_forbidden(verb, rt):
            raise status.forbidden(rt, verb, namespace, name)
        failure = self.state.take_failure(verb, rt.resource)
        if failure is not None:
            raise status.injected(failure.code, failure.retry_after)
        raw = self.state.take_raw_answer(verb, rt.resource)
        if raw is not None:
            self._send(200, raw)
            return
        getattr(self, "_" + verb)(req, query, body)

    # ---- verbs -------------------------------------------------------------------------------

    def _content_type(self) -> str:
        return self.headers.get("Content-Type", "").split(";")[0].strip().lower()

    def _body(self, body: bytes, rt: ResourceType) -> Any:
        return parsing.decode_body(body, rt, self._content_type())

    def _target(self, req: Request, query: dict[str, str]) -> tuple[mediatypes.Target, str]:
        """The negotiated form of a read's answer and its ``includeObject`` (406 if none fits).

        Subresources (``status``, ``scale``) answer as themselves."""
        if req.subresource:
            return mediatypes.PLAIN, ""
        target = mediatypes.negotiate(self.headers.get("Accept", ""))
        return target, tables.include_option(query) if target.kind == "Table" else ""

    def _writer(self, query: dict[str, str]) -> fieldmanager.Writer:
        return fieldmanager.Writer.of_request(query.get("fieldManager", ""),
                                              self.headers.get("User-Agent", ""))

    def _get(self, req: Request, query: dict[str, str], body: bytes) -> None:
        target, include = self._target(req, query)
        entry = self.state.storage.get(req.rt, req.namespace, req.name, req.cluster)
        if req.subresource == "scale":
            self._send_obj(200, scale.view(entry.obj))
            return
        self._send(200, responses.obj(req.rt, entry, target, include))

    def _create(self, req: Request, query: dict[str, str], body: bytes) -> None:
        obj = self._body(body, req.rt)
        if req.subresource == "token":
            account = self.state.storage.get(req.rt, req.namespace, req.name, req.cluster)
            self._send_obj(201, tokens.issue(account.obj, obj))
            return
        parsing.check_api_version(req.rt, obj)
        entry = self.state.storage.create(req.rt, req.namespace, obj, parsing.dry_run(query),
                                          self._writer(query), cluster=req.cluster)
        self._send(201, responses.obj(req.rt, entry, mediatypes.PLAIN))

    def _update(self, req: Request, query: dict[str, str], body: bytes) -> None:
        obj = self._body(body, req.rt)
        writer = self._writer(query)
        if req.subresource == "scale":
            self._scale(req, query, lambda current: scale.set_replicas(current, obj), writer)
            return
        parsing.check_api_version(req.rt, obj)
        entry = self.state.storage.update(req.rt, req.namespace, req.name, obj, req.subresource,
                                          parsing.dry_run(query), writer, cluster=req.cluster)
        self._send(200, responses.obj(req.rt, entry, mediatypes.PLAIN))

    def _patch(self, req: Request, query: dict[str, str], body: bytes) -> None:
        content_type = self._content_type()
        doc = self._body(body, req.rt) if content_type != patches.APPLY else None
        if content_type == patches.JSON_PATCH:
            if not isinstance(doc, list):
                raise status.bad_request("a JSON patch must be a list of operations")
            ops = doc

            def apply(current: dict[str, Any]) -> Any:
                return patches.json_patch(current, ops)

        elif content_type == patches.MERGE:
            if not isinstance(doc, dict):
                raise status.bad_request("a merge patch must be a JSON object")
            merge = doc

            def apply(current: dict[str, Any]) -> Any:
                return patches.merge_patch(current, merge)

        elif content_type == patches.STRATEGIC and not req.rt.custom:
            if not isinstance(doc, dict):
                raise status.bad_request("a strategic merge patch must be a JSON object")
            strategic = doc

            def apply(current: dict[str, Any]) -> Any:
                return patches.strategic_merge_patch(current, strategic)

        elif content_type == patches.APPLY:
            self._server_side_apply(req, query, body)
            return
        else:
            raise status.unsupported_media_type(content_type)
        writer = self._writer(query)
        if req.subresource == "scale":
            self._scale(req, query,
                        lambda current: scale.set_replicas(current, apply(scale.view(current))),
                        writer)
            return
        entry = self.state.storage.patch(req.rt, req.namespace, req.name, apply, req.subresource,
                                         parsing.dry_run(query), writer, cluster=req.cluster)
        self._send(200, responses.obj(req.rt, entry, mediatypes.PLAIN))

    def _scale(self, req: Request, query: dict[str, str], change: Any,
               writer: fieldmanager.Writer) -> None:
        """Write through the scale subresource: ``change`` sets the object's replicas."""
        entry = self.state.storage.patch(req.rt, req.namespace, req.name, change, "",
                                         parsing.dry_run(query), writer, cluster=req.cluster)
        self._send_obj(200, scale.view(entry.obj))

    def _server_side_apply(self, req: Request, query: dict[str, str], body: bytes) -> None:
        """Server-side apply, simplified: create when missing, else merge the applied fields in
        (strategic merge for built-ins, merge patch for custom objects). The applier owns the
        applied fields (an ``Apply`` managedFields entry), but fields dropped from its
        configuration are not removed and conflicts with other managers are not reported."""
        try:
            applied = patches.load_apply_body(body)
        except ValueError as err:
            raise status.bad_request(f"error decoding YAML: {err}") from None
        manager = query.get("fieldManager")
        if not manager:
            raise status.invalid_options("PatchOptions", [(
                "FieldValueRequired", "fieldManager",
                "Required value: is required for apply patch")])
        writer = fieldmanager.Writer(manager, fieldmanager.APPLY, applied)
        merge = patches.merge_patch if req.rt.custom else patches.strategic_merge_patch
        storage = self.state.storage
        try:
            entry = storage.patch(req.rt, req.namespace, req.name,
                                  lambda current: merge(current, applied), req.subresource,
                                  parsing.dry_run(query), writer, cluster=req.cluster)
            code = 200
        except StatusError as err:
            if err.code != 404 or req.subresource:
                raise
            created = records.copy(applied)
            meta = created.setdefault("metadata", {})
            if isinstance(meta, dict):
                meta.setdefault("name", req.name)
            entry = storage.create(req.rt, req.namespace, created, parsing.dry_run(query), writer,
                                   cluster=req.cluster)
            code = 201
        self._send(code, responses.obj(req.rt, entry, mediatypes.PLAIN))

    def _delete(self, req: Request, query: dict[str, str], body: bytes) -> None:
        options = parsing.delete_options(self._body(body, req.rt) if body else None, query)
        entry, gone = self.state.storage.delete(req.rt, req.namespace, req.name,
                                                options.preconditions, options.dry_run,
                                                cluster=req.cluster,
                                                gc_finalizer=options.gc_finalizer)
        if req.rt.returns_deleted or not gone:
            # the object itself: for these types always, for the others while finalizers
            # hold it (then it carries its deletionTimestamp)
            self._send(200, responses.obj(req.rt, entry, mediatypes.PLAIN))
            return
        self._send(200, status.encode(status.deleted(req.rt, req.name, entry.obj)))

    def _deletecollection(self, req: Request, query: dict[str, str], body: bytes) -> None:
        options = parsing.delete_options(self._body(body, req.rt) if body else None, query)
        match = parsing.matcher(req.rt, query)
        storage = self.state.storage
        deleted = []
        for entry in storage.entries(req.rt, req.namespace, req.cluster):
            if match is None or match(entry.obj):
                meta = entry.obj["metadata"]
                try:
                    final, _ = storage.delete(req.rt, meta.get("namespace", ""), meta["name"],
                                              dry_run=options.dry_run, cluster=req.cluster,
                                              gc_finalizer=options.gc_finalizer)
                except StatusError:
                    continue
                deleted.append(final)
        meta = responses.list_meta(storage.resource_version)
        self._send(200, responses.items(req.rt, deleted, meta, mediatypes.PLAIN))

    def _list(self, req: Request, query: dict[str, str], body: bytes) -> None:
        rt = req.rt
        target, include = self._target(req, query)
        shard = shards.selector(query, self.state.feature_gates)
        match = shards.combine(parsing.matcher(rt, query), shard)
        rv, rv_match = parsing.list_options(query, watch=False)
        limit_text = query.get("limit", "") or "0"
        if not limit_text.lstrip("-").isdigit():
            raise status.bad_request(f'invalid limit "{limit_text}"')
        entries, list_rv, token, remaining = self.state.storage.list_page(
            rt, req.namespace, match, max(0, int(limit_text)), query.get("continue", ""),
            rv, rv_match, req.cluster)
        meta = responses.list_meta(list_rv, token, remaining if match is None else None,
                                   None if shard is None else str(shard))
        self._send(200, responses.items(rt, entries, meta, target, include))

    def _connect(self, req: Request, query: dict[str, str]) -> None:
        """``exec``, ``attach`` or ``portforward`` on a Pod: checked, then refused (no kubelet)."""
        if self.command not in connect.METHODS or not req.name:
            raise status.method_not_allowed()
        pod = self.state.storage.get(req.rt, req.namespace, req.name, req.cluster).obj
        node = str((pod.get("spec") or {}).get("nodeName") or "")
        nodes = self.state.storage.resolve("", "v1", "nodes", req.cluster)
        node_exists = False
        if node and nodes is not None:
            try:
                self.state.storage.get(nodes, "", node, req.cluster)
                node_exists = True
            except StatusError:
                pass
        raise connect.refuse(pod, req.subresource, query, node_exists)

    def _log(self, req: Request, query: dict[str, str]) -> None:
        """``log`` of a Pod: 204 with no body until it has a node, then the kubelet's error."""
        if self.command != "GET":
            raise status.method_not_allowed()
        pod = self.state.storage.get(req.rt, req.namespace, req.name, req.cluster).obj
        node_name = str((pod.get("spec") or {}).get("nodeName") or "")
        node: dict[str, Any] | None = None
        nodes = self.state.storage.resolve("", "v1", "nodes", req.cluster)
        if node_name and nodes is not None:
            with contextlib.suppress(StatusError):  # answered as a Node that does not exist
                node = self.state.storage.get(nodes, "", node_name, req.cluster).obj
        error = connect.log_answer(pod, query, node)
        if error is not None:
            raise error
        self._record(204)
        self.send_response(204)
        self.send_header("Cache-Control", "no-cache, private")
        self.end_headers()

    # ---- watch -------------------------------------------------------------------------------

    def _watch(self, req: Request, query: dict[str, str], body: bytes) -> None:
        rt = req.rt
        target, include = self._target(req, query)
        render = responses.watch_renderer(rt, target, include)
        try:
            selector = labelsel.parse_selector(query.get("labelSelector", ""))
        except errors.LabelSelectorError as err:
            raise status.bad_request(f"unable to parse requirement: {err}") from None
        field_text = query.get("fieldSelector", "")
        if req.name:
            field_text = ",".join(t for t in (field_text, f"metadata.name={req.name}") if t)
        fields = watchers.FieldSelector.parse(field_text, rt)
        rv, _ = parsing.list_options(query, watch=True)
        timeout_text = query.get("timeoutSeconds", "") or "0"
        if not timeout_text.isdigit():
            raise status.bad_request(f'invalid timeoutSeconds "{timeout_text}"')
        timeout = int(timeout_text)
        bookmarks = bool(parsing.bool_option(query, "allowWatchBookmarks"))
        send_initial = parsing.bool_option(query, "sendInitialEvents")
        shard = shards.selector(query, self.state.feature_gates)
        watcher = watchers.Watcher(rt, req.namespace, selector, fields,
                                   None if shard is None else shard.matches, req.cluster)
        expired: StatusError | None = None
        try:
            self.state.storage.watch(watcher, rv, send_initial, bookmarks)
        except StatusError as err:
            if err.code != 410:
                raise
            expired = err
        if self.state.stopping.is_set():
            # a watch read off a kept-alive connection as the server stops registers after
            # stop() dropped the open ones: it would wait for events until its timeout, and
            # stop() for it
            self.state.storage.unwatch(watcher)
            self.close_connection = True
            return
        self._record(200)
        self._streaming = True
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Transfer-Encoding", "chunked")
        self.send_header("Cache-Control", "no-cache, private")
        self.end_headers()
        bookmark_type = ("PartialObjectMetadata", f"meta.k8s.io/{target.version}") \
            if target.kind == "PartialObjectMetadata" else (rt.kind, rt.api_version)
        stream = watchstream.WatchStream(self.wfile, self.connection, self.state.storage,
                                         watcher, self.state.bookmark_interval, render,
                                         bookmark_type, self.state.pacing(), self.state.stopping)
        if expired is not None:
            stream.write_chunk(watchstream.error_line(expired))
            stream.end()
            return
        try:
            if not stream.run(timeout, bookmarks):
                self.close_connection = True
        finally:
            self.state.storage.unwatch(watcher)
