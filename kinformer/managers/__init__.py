"""The managers layer: fleet's InformerManager, kcp's discovering informer factory and
ControllerManager, and the controller that runs a reconciler over a work queue.
"""
