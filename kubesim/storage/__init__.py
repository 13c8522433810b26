"""Storage control loops of the embedded cluster: PV binder, simulated CSI driver, CSINodes.

controllers.py runs them (options, event intake, the work queue, CSINodes); binder.py holds the PV
controller's syncs and provisioning, matching.py which volume fits a claim, provisioner.py the
volume a provisioner makes, csi.py the driver's objects, index.py what the binder looks up,
objects.py the keys, annotations and field accessors they share.
"""
