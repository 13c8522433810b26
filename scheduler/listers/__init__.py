"""The objects plugins read besides pods and nodes, as the informers keep them.

Namespaces, the objects that select pods (Services, ReplicaSets, PDBs…) and the storage objects
(PVs, PVCs, StorageClasses, CSINodes…): upstream's listers. Plugins may import these; they import
nothing above the API views.
"""
