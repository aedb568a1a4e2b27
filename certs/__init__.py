"""Certificate tooling: CA, serving certificates, rotation and caBundle injection."""

__all__: list[str] = []
