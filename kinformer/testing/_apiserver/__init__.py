"""The fake API server's parts: resource types, storage, request handling, TLS material.

Private: the public entry point is :class:`kinformer.testing.apiserver.FakeAPIServer`.
"""
