"""The client layer: the one request path over the official ``ApiClient``, list and watch of a
resource type, and discovery. Everything that speaks HTTP to an API server lives here.
"""
