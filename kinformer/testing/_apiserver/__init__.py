"""The fake API server's parts: resource types, storage, watch cache, request handling, TLS.

Private: the public entry point is :class:`kinformer.testing.apiserver.FakeAPIServer`.
"""
