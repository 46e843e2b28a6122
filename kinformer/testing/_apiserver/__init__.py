"""The fake API server's parts, grouped as kube-apiserver groups its own.

Three rooms, each importing only the ones after it: :mod:`.wire` (kube-apiserver's endpoints:
the listener, request parsing, content negotiation, the bodies of answers, watch streams,
discovery), :mod:`.storage` (its storage and watch cache: objects, the one resourceVersion,
history, watchers, list snapshots) and :mod:`.registry` (its per-type rules: strategies,
defaults, validation, managed fields, subresources, Table printers). Beside them, the words all
three share: :mod:`.resources` (the served types), :mod:`.status` (``Status`` errors),
:mod:`.clusters` (logical clusters) and :mod:`.records` (the stored versions and their codec);
then :mod:`.server_state` (what every connection shares, built by the facade) and :mod:`.tls`.
The import contracts in setup.cfg hold this order.

Private: the public entry point is :class:`kinformer.testing.apiserver.FakeAPIServer`.
"""
