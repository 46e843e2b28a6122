"""``kinformer watch``: an informer-backed ``kubectl get -w``, one module per job.

:mod:`~kinformer.cli.watch.app` parses the command line and runs the watch;
:mod:`~kinformer.cli.watch.kubeconfig` makes the client (kubeconfig, a pod's service account or
an embedded server); :mod:`~kinformer.cli.watch.resolve` finds RESOURCE in discovery;
:mod:`~kinformer.cli.watch.table` prints events and tables; :mod:`~kinformer.cli.watch.exits`
holds the exit codes and the error that ends the command. With ``--all-contexts``,
:mod:`~kinformer.cli.watch.contexts` watches every context at once and
:mod:`~kinformer.cli.watch.outages` tells of each one's trouble, once per outage.
"""
