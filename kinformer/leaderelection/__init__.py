"""Leader election: run several replicas of a controller with exactly one of them active.

client-go's ``tools/leaderelection`` over a ``coordination.k8s.io/v1`` Lease. ``record`` holds
the value read from and written to the Lease (:class:`LeaderElectionRecord`) and prints its
times; ``lease_lock`` the lock that talks to the server through the client layer's one request
path (:class:`LeaseLock`, behind the :class:`ResourceLock` seam); ``config`` the checked
settings (:class:`LeaderElectionConfig`); ``elector`` the loop that acquires, renews and steps
down (:class:`LeaderElector`). Each imports only those listed before it. ``shard_coordinator``
shares its Leases among all members instead of electing one: :class:`ShardCoordinator` splits
the hash space among the live members of a group, watching their Leases with an informer. The
package sits beside the managers, above the informers: nothing below it imports it, and it
imports no manager, so it can run any of them.
"""

from kinformer.leaderelection.config import LeaderElectionConfig
from kinformer.leaderelection.elector import LeaderElector
from kinformer.leaderelection.lease_lock import LeaseLock, ResourceLock
from kinformer.leaderelection.record import LeaderElectionRecord
from kinformer.leaderelection.shard_coordinator import ShardCoordinator

__all__ = [
    "LeaderElectionConfig",
    "LeaderElectionRecord",
    "LeaderElector",
    "LeaseLock",
    "ResourceLock",
    "ShardCoordinator",
]
