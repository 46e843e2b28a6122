"""The former name of :mod:`_server_process`, kept while ``bench_scale.py`` still imports it.

"Cluster" means a Kubernetes cluster in this project; the child-process server and its objects
live in ``_server_process.py``. Remove this module once nothing imports ``_cluster``.
"""

from _server_process import PART_LABEL, PODS, ServerProcess, rss_mb, scale_pod

__all__ = ["PART_LABEL", "PODS", "ServerProcess", "rss_mb", "scale_pod"]
