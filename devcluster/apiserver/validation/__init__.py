"""kube-apiserver's built-in write strategy and validation, with its rules and texts: ObjectMeta,
batch/v1 Job and its status, Pod, Event, and the per-kind dispatch (``strategy``).
"""

__all__: list[str] = []
