"""``make release-manifests``: one YAML per install flavour, built from ``deploy/``, image tag pinned.

``python -m bridge_tools.manifests.release_bundle --out dist [--image kueue-bridge:0.1.0]`` writes

* ``kueue-bridge-<version>.yaml``: ``deploy/base`` + ``deploy/kueue`` (what kueue-bridge may read in
  Kueue's namespace);
* ``kueue-bridge-appwrapper-<version>.yaml``: ``deploy/appwrapper`` (the base with AppWrapper support)
  + ``deploy/kueue``;
* ``kueue-bridge-worker-<version>.yaml``: ``deploy/worker``, for MultiKueue worker clusters.

There is no kustomize binary on the build machines, so the kustomizations are resolved here, for the
features ``deploy/`` uses and no others (anything else is an error, not silently skipped):
``resources`` (files and directories), ``configMapGenerator`` (create, or ``behavior: replace``;
no name-suffix hash, as with kustomize's ``disableNameSuffixHash``), ``patches`` (strategic merge,
where lists of named items, e.g. ``webhooks``, merge by ``name``), ``labels`` without selectors and
``namespace`` (set on namespaced objects that have none). Every ``image:`` of ours is pinned.

Invariant: the output is deterministic (same ``deploy/`` and image, same bytes), and every object
is one ``kueue-bridge manifests --config deploy/base/config.yaml`` renders too (a test compares them).
"""

from __future__ import annotations

import argparse
import copy
import sys
from importlib import metadata
from pathlib import Path
from typing import Any, Final

import yaml

from bridge_tools.manifests.cli import default_image, dump_documents

__all__ = ["BUNDLES", "KustomizeError", "build_bundles", "main", "resolve_kustomization"]

WireDict = dict[str, Any]
UNPINNED_IMAGE: Final = "kueue-bridge:latest"
#: bundle file stem -> kustomization directories (relative to deploy/), concatenated
BUNDLES: Final[dict[str, tuple[str, ...]]] = {
    "kueue-bridge": ("base", "kueue"),
    "kueue-bridge-appwrapper": ("appwrapper", "kueue"),
    "kueue-bridge-worker": ("worker",),
}
_CLUSTER_SCOPED: Final = frozenset(
    {
        "Namespace",
        "ClusterRole",
        "ClusterRoleBinding",
        "MutatingWebhookConfiguration",
        "ValidatingWebhookConfiguration",
        "CustomResourceDefinition",
    }
)
_KNOWN_FIELDS: Final = frozenset(
    {"apiVersion", "kind", "namespace", "labels", "resources", "configMapGenerator", "patches"}
)


class KustomizeError(ValueError):
    """A kustomization uses something this resolver does not implement."""


def _load(path: Path) -> list[WireDict]:
    return [doc for doc in yaml.safe_load_all(path.read_text(encoding="utf-8")) if doc]


def _merge(target: Any, patch: Any) -> Any:
    if isinstance(target, dict) and isinstance(patch, dict):
        merged = dict(target)
        for key, value in patch.items():
            merged[key] = _merge(target.get(key), value) if key in target else copy.deepcopy(value)
        return merged
    if (
        isinstance(target, list)
        and isinstance(patch, list)
        and all(isinstance(item, dict) and "name" in item for item in target + patch)
    ):
        by_name = {item["name"]: item for item in target}
        merged_list = [
            _merge(by_name[item["name"]], item) if item["name"] in by_name else item for item in patch
        ]
        patched = {item["name"] for item in patch}
        return [item for item in target if item["name"] not in patched] + merged_list
    return copy.deepcopy(patch)


def _key(obj: WireDict) -> tuple[str, str]:
    return (str(obj.get("kind")), str((obj.get("metadata") or {}).get("name")))


def resolve_kustomization(directory: Path) -> list[WireDict]:
    """The objects ``kubectl apply -k directory`` would create (see the module docstring)."""
    kustomization = yaml.safe_load((directory / "kustomization.yaml").read_text(encoding="utf-8")) or {}
    unknown = set(kustomization) - _KNOWN_FIELDS
    if unknown:
        raise KustomizeError(f"{directory}/kustomization.yaml: unsupported fields {sorted(unknown)}")
    objects: list[WireDict] = []
    for entry in kustomization.get("resources") or []:
        path = directory / entry
        objects += resolve_kustomization(path) if path.is_dir() else _load(path)
    for generator in kustomization.get("configMapGenerator") or []:
        data = {
            Path(name).name: (directory / name).read_text(encoding="utf-8") for name in generator["files"]
        }
        behavior = generator.get("behavior", "create")
        existing = [o for o in objects if _key(o) == ("ConfigMap", generator["name"])]
        if behavior == "replace":
            if len(existing) != 1:
                raise KustomizeError(
                    f"{directory}: configMapGenerator {generator['name']}: nothing to replace"
                )
            existing[0]["data"] = data
        elif behavior == "create" and not existing:
            objects.append(
                {
                    "apiVersion": "v1",
                    "kind": "ConfigMap",
                    "metadata": {"name": generator["name"]},
                    "data": data,
                }
            )
        else:
            raise KustomizeError(f"{directory}: configMapGenerator behavior {behavior!r} is not supported")
    for patch in kustomization.get("patches") or []:
        if set(patch) != {"path"}:
            raise KustomizeError(f"{directory}: only patches with a path are supported")
        for document in _load(directory / patch["path"]):
            targets = [i for i, o in enumerate(objects) if _key(o) == _key(document)]
            if len(targets) != 1:
                raise KustomizeError(f"{directory}: patch {patch['path']} matches {len(targets)} objects")
            objects[targets[0]] = _merge(objects[targets[0]], document)
    namespace = kustomization.get("namespace")
    labels: dict[str, str] = {}
    for entry in kustomization.get("labels") or []:
        if entry.get("includeSelectors", False):
            raise KustomizeError(f"{directory}: labels with includeSelectors are not supported")
        labels.update(entry["pairs"])
    for obj in objects:
        metadata_ = obj.setdefault("metadata", {})
        if namespace and obj.get("kind") not in _CLUSTER_SCOPED and not metadata_.get("namespace"):
            metadata_["namespace"] = namespace
        if labels:
            metadata_["labels"] = {**(metadata_.get("labels") or {}), **labels}
    return objects


def _pin(value: Any, image: str) -> Any:
    if isinstance(value, dict):
        return {
            k: (image if k == "image" and v == UNPINNED_IMAGE else _pin(v, image)) for k, v in value.items()
        }
    if isinstance(value, list):
        return [_pin(item, image) for item in value]
    return value


def build_bundles(deploy: Path, *, image: str) -> dict[str, list[WireDict]]:
    """Bundle stem -> its objects, every image of ours pinned to ``image``."""
    bundles: dict[str, list[WireDict]] = {}
    for stem, directories in BUNDLES.items():
        objects = [obj for name in directories for obj in resolve_kustomization(deploy / name)]
        bundles[stem] = [_pin(obj, image) for obj in objects]
    return bundles


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bridge_tools.manifests.release_bundle")
    parser.add_argument("--deploy", type=Path, default=Path(__file__).resolve().parents[2] / "deploy")
    parser.add_argument("--out", type=Path, default=Path("dist"))
    parser.add_argument("--image", default=None, help=f"image to pin (default: {default_image()})")
    args = parser.parse_args(argv)
    image = args.image or default_image()
    if image.endswith(":latest") or ":" not in image.rsplit("/", 1)[-1]:
        print(f"release_bundle: pin a tag, not {image!r}", file=sys.stderr)
        return 2
    args.out.mkdir(parents=True, exist_ok=True)
    version = metadata.version("kueue-bridge")
    for stem, objects in build_bundles(args.deploy, image=image).items():
        path = args.out / f"{stem}-{version}.yaml"
        header = f"# {stem} {version}, image {image}: built from deploy/ by `make release-manifests`\n"
        path.write_text(header + dump_documents(objects), encoding="utf-8")
        print(f"{path}: {len(objects)} objects")
    return 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
