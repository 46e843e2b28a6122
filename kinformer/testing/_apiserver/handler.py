"""HTTP request handling of the fake API server: routing, verbs, list and watch responses.

One :class:`Handler` per connection (HTTP/1.1 keep-alive) on the server's connection thread.
Paths route to discovery documents (:mod:`.discovery`) or to resource requests, parsed and
checked by :mod:`.request`, which become calls on
:class:`~kinformer.testing._apiserver.storage.Storage`; the fault switches of
:class:`~kinformer.testing._apiserver.server_state.ServerState` apply first, and errors become
``Status`` bodies. Watch responses are chunked JSON lines, one event per line, fed from the
watcher's own queue, so the connection thread is the only one that waits on a slow client.
"""

from __future__ import annotations

import hmac
import http.server
import logging
from typing import Any
from urllib.parse import parse_qs, urlsplit

from kinformer import errors
from kinformer.cache import labels as labelsel
from kinformer.testing._apiserver import (
    discovery,
    openapi,
    records,
    resources,
    scale,
    server_state,
    shards,
    status,
    tokens,
    watchers,
    watchstream,
)
from kinformer.testing._apiserver import patch as patches
from kinformer.testing._apiserver import request as parsing
from kinformer.testing._apiserver.request import Request
from kinformer.testing._apiserver.resources import ResourceType
from kinformer.testing._apiserver.status import StatusError

log = logging.getLogger("kinformer.testing.apiserver")


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
        try:
            body = self._read_body()
            self._authenticate()
            self._route(url.path, query, body)
        except StatusError as err:
            if not self._streaming:
                self._send_json(err.code, status.encode(err.body()), headers=err.headers())
        except OSError:
            self.close_connection = True
        except Exception:
            log.exception("internal error serving %s %s", self.command, url.path)
            if not self._streaming:
                self._send_json(500, status.encode(status.status_body(
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
        length = self.headers.get("Content-Length")
        if length:
            try:
                size = int(length)
            except ValueError:
                self.close_connection = True
                raise status.bad_request("invalid Content-Length") from None
            return self.rfile.read(size)
        if "chunked" in self.headers.get("Transfer-Encoding", "").lower():
            parts: list[bytes] = []
            while True:
                line = self.rfile.readline()
                try:
                    size = int(line.split(b";")[0].strip() or b"0", 16)
                except ValueError:
                    self.close_connection = True
                    raise status.bad_request("invalid chunked request body") from None
                if size == 0:
                    while self.rfile.readline() not in (b"\r\n", b"\n", b""):
                        pass
                    return b"".join(parts)
                parts.append(self.rfile.read(size))
                self.rfile.readline()
        return b""

    def _authenticate(self) -> None:
        token = self.state.token
        if token is None:
            return
        given = self.headers.get("Authorization", "")
        scheme, _, value = given.partition(" ")
        if scheme.lower() != "bearer" or not hmac.compare_digest(value.strip().encode(), token):
            raise status.unauthorized()

    def _send_json(
        self, code: int, data: bytes, content_type: str = "application/json",
        headers: dict[str, str] | None = None,
    ) -> None:
        self._record(code)
        self.send_response(code)
        for name, value in (headers or {}).items():
            self.send_header(name, value)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(data)))
        self.send_header("Cache-Control", "no-cache, private")
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(data)

    def _send_obj(self, code: int, obj: Any) -> None:
        self._send_json(code, records.dumps(obj))

    # ---- routing -----------------------------------------------------------------------------

    def _route(self, path: str, query: dict[str, str], body: bytes) -> None:
        parts = [p for p in path.split("/") if p]
        if parts and parts[0] in ("healthz", "readyz", "livez"):
            self._send_json(200, b"ok", "text/plain; charset=utf-8")
            return
        if parts == ["version"]:
            self._send_obj(200, resources.version_info())
            return
        if parts[:2] == ["openapi", "v3"]:
            self._openapi(parts[2:])
            return
        if not parts or parts[0] not in ("api", "apis"):
            raise status.path_not_found()
        if parts[0] == "api":
            if len(parts) == 1:
                self._send_obj(200, discovery.api_versions(self.state.address))
                return
            if parts[1] != "v1":
                raise status.path_not_found()
            group, version, rest = "", "v1", parts[2:]
        else:
            if len(parts) == 1:
                self._send_obj(200, discovery.group_list(self.state.storage.types()))
                return
            if len(parts) == 2:
                self._send_obj(200, discovery.group(self.state.storage.types(), parts[1]))
                return
            group, version, rest = parts[1], parts[2], parts[3:]
        if not rest:
            self._send_obj(200, discovery.resource_list(self.state.storage.types(), group, version))
            return
        self._resource_request(group, version, rest, query, body)

    def _openapi(self, rest: list[str]) -> None:
        types = self.state.storage.types()
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
        watch_path = rest[0] == "watch"
        if watch_path:
            rest = rest[1:]
        namespace = ""
        if len(rest) >= 3 and rest[0] == "namespaces":
            inner = storage.resolve(group, version, rest[2])
            if inner is not None and inner.namespaced:
                namespace, rest = rest[1], rest[2:]
        if not rest or len(rest) > 3:
            raise status.path_not_found()
        rt = storage.resolve(group, version, rest[0])
        if rt is None or (namespace and not rt.namespaced):
            raise status.path_not_found()
        name = rest[1] if len(rest) > 1 else ""
        sub = rest[2] if len(rest) > 2 else ""
        if sub and not (sub == "status" and rt.status) and (rt.group_resource, sub) not in (
                ("serviceaccounts", "token"), *((r, "scale") for r in resources.SCALABLE)):
            raise status.path_not_found()
        req = Request(rt, namespace, name, sub)
        verb = parsing.verb(self.command, req, watch_path or query.get("watch") in ("true", "1"))
        delay = self.state.delay_for(verb)
        if delay > 0:
            self.state.stopping.wait(delay)
        if self.state.is_forbidden(verb, rt):
            raise status.forbidden(rt, verb, namespace, name)
        code = self.state.take_failure(verb, rt.resource)
        if code is not None:
            raise status.injected(code)
        raw = self.state.take_raw_answer(verb, rt.resource)
        if raw is not None:
            self._send_json(200, raw)
            return
        getattr(self, "_" + verb)(req, query, body)

    # ---- verbs -------------------------------------------------------------------------------

    def _data(self, rt: ResourceType, entry: records.Entry) -> bytes:
        return records.data_for(rt, entry)

    def _content_type(self) -> str:
        return self.headers.get("Content-Type", "").split(";")[0].strip().lower()

    def _body(self, body: bytes, rt: ResourceType) -> Any:
        return parsing.decode_body(body, rt, self._content_type())

    def _get(self, req: Request, query: dict[str, str], body: bytes) -> None:
        entry = self.state.storage.get(req.rt, req.namespace, req.name)
        if req.subresource == "scale":
            self._send_obj(200, scale.view(entry.obj))
            return
        self._send_json(200, self._data(req.rt, entry))

    def _create(self, req: Request, query: dict[str, str], body: bytes) -> None:
        obj = self._body(body, req.rt)
        if req.subresource == "token":
            account = self.state.storage.get(req.rt, req.namespace, req.name)
            self._send_obj(201, tokens.issue(account.obj, obj))
            return
        parsing.check_api_version(req.rt, obj)
        entry = self.state.storage.create(req.rt, req.namespace, obj, parsing.dry_run(query))
        self._send_json(201, self._data(req.rt, entry))

    def _update(self, req: Request, query: dict[str, str], body: bytes) -> None:
        obj = self._body(body, req.rt)
        if req.subresource == "scale":
            self._scale(req, query, lambda current: scale.set_replicas(current, obj))
            return
        parsing.check_api_version(req.rt, obj)
        entry = self.state.storage.update(req.rt, req.namespace, req.name, obj, req.subresource,
                                          parsing.dry_run(query))
        self._send_json(200, self._data(req.rt, entry))

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
        if req.subresource == "scale":
            self._scale(req, query,
                        lambda current: scale.set_replicas(current, apply(scale.view(current))))
            return
        entry = self.state.storage.patch(req.rt, req.namespace, req.name, apply, req.subresource,
                                         parsing.dry_run(query))
        self._send_json(200, self._data(req.rt, entry))

    def _scale(self, req: Request, query: dict[str, str], change: Any) -> None:
        """Write through the scale subresource: ``change`` sets the object's replicas."""
        entry = self.state.storage.patch(req.rt, req.namespace, req.name, change, "",
                                         parsing.dry_run(query))
        self._send_obj(200, scale.view(entry.obj))

    def _server_side_apply(self, req: Request, query: dict[str, str], body: bytes) -> None:
        """Server-side apply, simplified: create when missing, else merge the applied fields in
        (strategic merge for built-ins, merge patch for custom objects). Field ownership is not
        tracked, so fields dropped from the applied configuration are not removed."""
        try:
            applied = patches.load_apply_body(body)
        except ValueError as err:
            raise status.bad_request(f"error decoding YAML: {err}") from None
        if not query.get("fieldManager"):
            raise status.invalid_options("PatchOptions", [(
                "FieldValueRequired", "fieldManager",
                "Required value: is required for apply patch")])
        merge = patches.merge_patch if req.rt.custom else patches.strategic_merge_patch
        storage = self.state.storage
        try:
            entry = storage.patch(req.rt, req.namespace, req.name,
                                  lambda current: merge(current, applied), req.subresource,
                                  parsing.dry_run(query))
            code = 200
        except StatusError as err:
            if err.code != 404 or req.subresource:
                raise
            meta = applied.setdefault("metadata", {})
            if isinstance(meta, dict):
                meta.setdefault("name", req.name)
            entry = storage.create(req.rt, req.namespace, applied, parsing.dry_run(query))
            code = 201
        self._send_json(code, self._data(req.rt, entry))

    def _delete(self, req: Request, query: dict[str, str], body: bytes) -> None:
        options = self._body(body, req.rt) if body else None
        pre = options.get("preconditions") if isinstance(options, dict) else None
        entry, gone = self.state.storage.delete(req.rt, req.namespace, req.name,
                                                pre if isinstance(pre, dict) else None,
                                                parsing.dry_run(query))
        if req.rt.returns_deleted or not gone:
            # the object itself: for these types always, for the others while finalizers
            # hold it (then it carries its deletionTimestamp)
            self._send_json(200, self._data(req.rt, entry))
            return
        self._send_json(200, status.encode(status.deleted(req.rt, req.name, entry.obj)))

    def _deletecollection(self, req: Request, query: dict[str, str], body: bytes) -> None:
        match = parsing.matcher(req.rt, query)
        storage = self.state.storage
        deleted = []
        for entry in storage.entries(req.rt, req.namespace):
            if match is None or match(entry.obj):
                meta = entry.obj["metadata"]
                try:
                    final, _ = storage.delete(req.rt, meta.get("namespace", ""), meta["name"],
                                              dry_run=parsing.dry_run(query))
                except StatusError:
                    continue
                deleted.append(self._data(req.rt, final))
        self._send_list(req.rt, deleted, storage.resource_version, "", None)

    def _list(self, req: Request, query: dict[str, str], body: bytes) -> None:
        rt = req.rt
        shard = shards.selector(query, self.state.feature_gates)
        match = shards.combine(parsing.matcher(rt, query), shard)
        rv, rv_match = parsing.list_options(query, watch=False)
        limit_text = query.get("limit", "") or "0"
        if not limit_text.lstrip("-").isdigit():
            raise status.bad_request(f'invalid limit "{limit_text}"')
        entries, list_rv, token, remaining = self.state.storage.list_page(
            rt, req.namespace, match, max(0, int(limit_text)), query.get("continue", ""),
            rv, rv_match)
        data = [self._data(rt, e) for e in entries] if rt.custom else [e.data for e in entries]
        self._send_list(rt, data, list_rv, token, remaining if match is None else None,
                        None if shard is None else str(shard))

    def _send_list(
        self, rt: ResourceType, items: list[bytes], rv: int, token: str, remaining: int | None,
        shard_info: str | None = None,
    ) -> None:
        meta: dict[str, Any] = {"resourceVersion": str(rv)}
        if token:
            meta["continue"] = token
            if remaining is not None:
                meta["remainingItemCount"] = remaining
        if shard_info is not None:
            meta["shardInfo"] = {"selector": shard_info}
        head = (b'{"kind":"' + rt.list_kind.encode() + b'","apiVersion":"'
                + rt.api_version.encode() + b'","metadata":' + records.dumps(meta)
                + b',"items":[')
        self._send_json(200, head + b",".join(items) + b"]}")

    # ---- watch -------------------------------------------------------------------------------

    def _watch(self, req: Request, query: dict[str, str], body: bytes) -> None:
        rt = req.rt
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
        bookmarks = query.get("allowWatchBookmarks") in ("true", "1")
        send_initial = query.get("sendInitialEvents") in ("true", "1")
        shard = shards.selector(query, self.state.feature_gates)
        watcher = watchers.Watcher(rt, req.namespace, selector, fields,
                                   None if shard is None else shard.matches)
        expired: StatusError | None = None
        try:
            self.state.storage.watch(watcher, rv, send_initial)
        except StatusError as err:
            if err.code != 410:
                raise
            expired = err
        self._record(200)
        self._streaming = True
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Transfer-Encoding", "chunked")
        self.send_header("Cache-Control", "no-cache, private")
        self.end_headers()
        stream = watchstream.WatchStream(self.wfile, self.connection, self.state.storage,
                                         watcher, self.state.bookmark_interval)
        if expired is not None:
            stream.write_chunk(watchstream.error_line(expired))
            stream.end()
            return
        try:
            if not stream.run(timeout, bookmarks):
                self.close_connection = True
        finally:
            self.state.storage.unwatch(watcher)
