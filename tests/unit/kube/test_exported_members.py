from __future__ import annotations

import importlib
import pkgutil

import shared.kube


def isort_style(name: str) -> tuple[int, str]:
    """ruff's RUF022 order: CONSTANTS, then Classes, then functions."""
    return (0 if name.isupper() else 1 if name[0].isupper() else 2, name)


def test_package_all_is_sorted_and_complete() -> None:
    exported = shared.kube.__all__
    assert exported == sorted(exported, key=isort_style)
    public = {name for name in dir(shared.kube) if not name.startswith("_")}
    modules = {info.name for info in pkgutil.iter_modules(shared.kube.__path__)}
    assert public - modules == set(exported)


def test_every_module_declares_all_and_exports_what_exists() -> None:
    for info in pkgutil.iter_modules(shared.kube.__path__):
        module = importlib.import_module(f"shared.kube.{info.name}")
        assert hasattr(module, "__all__"), info.name
        for name in module.__all__:
            assert hasattr(module, name), f"{info.name}.{name}"
