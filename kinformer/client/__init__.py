"""The client layer: everything that speaks HTTP to an API server lives here.

``listerwatcher`` is the list-and-watch seam (the ListerWatcher protocol and its values), which
the reflector depends on; ``rest`` the one request path over the official ``ApiClient``
(cancellable); ``resource`` the HTTP list and watch of one resource collection over it;
``listwatch`` ListWatch, from two callables or over HTTP; ``discovery`` which types the server
serves. Each imports only those listed before it. (The hand-fed watch of tests,
``ChannelWatch``, is one of the fakes of :mod:`kinformer.testing`.)
"""
