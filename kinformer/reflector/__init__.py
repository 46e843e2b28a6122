"""The reflector: lists and watches one resource type with client-go's rules and keeps a store
equal to the server.
"""

from kinformer.reflector.reflector import Reflector, WatchErrorHandler

__all__ = ["Reflector", "WatchErrorHandler"]
