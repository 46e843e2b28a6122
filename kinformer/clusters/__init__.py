"""Member clusters that come and go: providers, and informers across every engaged cluster.

fleet's and multicluster-runtime's model on kinformer's informers. A cluster provider
(``provider.py``, ``kubeconfig.py``, ``cluster_profile.py`` with ``exec_credential.py``)
reports clusters joining, changing and leaving; the
:class:`~kinformer.MultiClusterInformerFactory` (``factory.py``) runs, per engaged cluster, an
ordinary :class:`~kinformer.DynamicSharedInformerFactory` under a child context of its own
(``member.py``), and each :class:`~kinformer.MultiClusterInformer` (``informer.py``) serves
one resource type across them, delivering to each handler on one thread of its own
(``delivery.py``). Above ``factory.py``, below ``controllers/`` and ``managers/``; the
cluster-aware keys, indexes and lister it reads through sit in ``cache/``.
"""

from kinformer.clusters.cluster_profile import ClusterProfileProvider
from kinformer.clusters.factory import MultiClusterInformerFactory
from kinformer.clusters.informer import ClusterHandlerRegistration, ClusterStatus, MultiClusterInformer
from kinformer.clusters.kubeconfig import KubeconfigContextsProvider, KubeconfigSecretProvider
from kinformer.clusters.provider import ClusterProvider, StaticClusterProvider, SyncingClusterProvider

__all__ = [
    "ClusterHandlerRegistration",
    "ClusterProfileProvider",
    "ClusterProvider",
    "ClusterStatus",
    "KubeconfigContextsProvider",
    "KubeconfigSecretProvider",
    "MultiClusterInformer",
    "MultiClusterInformerFactory",
    "StaticClusterProvider",
    "SyncingClusterProvider",
]
