"""The managers layer, above the informers and ``factory.py``.

``informer_manager`` (fleet's InformerManager, over the plain factory), ``discovering_factory``
(kcp's ddsif, over the plain factory's registry, with ``crd`` for its CRD watch),
``controller_manager`` (kcp's syncer controller manager) and ``source`` (the InformerSource the
last two agree on, so neither imports the other). The controllers they run live one layer down,
in ``controllers/``.
"""
