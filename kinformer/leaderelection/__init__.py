"""Leader election and shard membership: replicas that agree through ``coordination.k8s.io/v1`` Leases.

client-go's ``tools/leaderelection``. ``record`` holds the value read from and written to a
Lease (:class:`LeaderElectionRecord`) and prints its times; ``lease_client`` the one Lease
client (:class:`~kinformer.leaderelection.lease_client.LeaseClient`: get, create, update, delete,
labels and the last-seen resourceVersion, over the client layer's one request path), which
everything else here talks to the server through; ``lease_lock`` the lock of an election
(:class:`LeaseLock`, behind the :class:`ResourceLock` seam); ``config`` the checked settings
(:class:`LeaderElectionConfig`); ``elector`` the loop that acquires, renews and steps down
(:class:`LeaderElector`). ``shard_coordinator`` shares Leases among all members instead of
electing one: :class:`ShardCoordinator` keeps one Lease per member, watches the group's Leases
with a reflector and splits the hash space among the live members. Each imports only those
listed before it.

The coordinator lives here, not beside the shard selector, because what it shares with the
elector is the Lease: its client, its record's times, the rule that expiry is judged on the
local clock. The selector it hands out (:mod:`kinformer.sharding`) stays low, below the cache
layer, where the reflector and the cache import it; a ``sharding/`` package holding both would
put the selector's importers and the coordinator's imports (reflector, Lease client) in one
package, a cycle between packages. This package sits beside the managers, above the informers:
nothing below it imports it, and it imports no manager, so it can run any of them.
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
