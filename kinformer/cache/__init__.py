"""The cache layer: keys and stores, the thread-safe indexer, the FIFOs, listers and label
selectors. Pure data structures with their locks: no threads of their own, no I/O.
"""
