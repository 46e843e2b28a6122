"""Work queues (client-go ``util/workqueue``): where event handlers leave keys for controllers.

:class:`WorkQueue` deduplicates and never hands one item to two workers at once;
:class:`DelayingQueue` adds ``add_after``; :class:`RateLimitingQueue` adds per-item retry
backoff from the limiters in :mod:`kinformer.workqueue.rate_limiters`; :class:`PriorityQueue`
serves live changes before an initial list's keys.
"""

from kinformer.workqueue.delaying import DelayingQueue
from kinformer.workqueue.priority import PriorityQueue
from kinformer.workqueue.queue import WorkQueue
from kinformer.workqueue.rate_limiters import (
    BucketRateLimiter,
    ItemExponentialFailureRateLimiter,
    ItemFastSlowRateLimiter,
    MaxOfRateLimiter,
    RateLimiter,
    WithMaxWaitRateLimiter,
    default_controller_rate_limiter,
    default_item_based_rate_limiter,
)
from kinformer.workqueue.rate_limiting import RateLimitingQueue

__all__ = [
    "BucketRateLimiter",
    "DelayingQueue",
    "ItemExponentialFailureRateLimiter",
    "ItemFastSlowRateLimiter",
    "MaxOfRateLimiter",
    "PriorityQueue",
    "RateLimiter",
    "RateLimitingQueue",
    "WithMaxWaitRateLimiter",
    "WorkQueue",
    "default_controller_rate_limiter",
    "default_item_based_rate_limiter",
]
