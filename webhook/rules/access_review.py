"""May the requesting user create what an AppWrapper wraps? One SubjectAccessReview per component.

An AppWrapper's components are created later by the ``appwrapper`` controller under *its* service
account, so without this check anyone allowed to create AppWrappers could create any kind the
controller may create. The AppWrapper operator closes that hole at admission (its
``userRBACAdmissionCheck``, on by default); kueue-bridge does the same:

* the review asks ``create`` on the component's group/version/resource in the AppWrapper's
  namespace, for the request's ``userInfo`` (username, uid, groups and extra, copied over);
* the resource (plural) comes from discovery through the client's REST mapper (cached per kind);
  when discovery fails the review asks about ``*``, as the operator does. When discovery *answers*
  that the kind is not served (its CRD is not installed) the component is denied as not served:
  it could never be created (the operator admits it and fails later; AppWrapper #112/#150 ask for
  this check at admission);
* reviews of one request run concurrently and the whole set has a deadline (``timeout``) well
  under the API server's webhook timeout; an error or the deadline becomes an ``Internal error``
  for that component: the request is denied, never admitted unchecked (fail closed).

This is the only admission rule that calls the API server (a SubjectAccessReview cannot be
answered from a cache), so only AppWrapper creates pay for it.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final, Protocol

from shared.frameworks.base import INTERNAL, FieldError
from shared.kube import ApiError, GroupVersionKind, KubeClient, KubeError, UnknownKindError
from shared.kube.kinds import SUBJECT_ACCESS_REVIEW_GVK
from webhook.rules.appwrapper import WrappedKind, not_authorized, not_served

__all__ = ["SAR_GVK", "AccessDecision", "AccessReviewer", "KubeAccessReviewer", "review_components"]

log = logging.getLogger(__name__)

SAR_GVK: Final = SUBJECT_ACCESS_REVIEW_GVK


@dataclass(frozen=True)
class AccessDecision:
    allowed: bool
    #: the plural resource that was asked about ("*" when discovery could not name it)
    resource: str
    #: False when discovery answered that the kind is not served (its CRD is missing): nothing was
    #: asked, and the component could never be created
    served: bool = True


class AccessReviewer(Protocol):
    async def may_create(
        self, *, user_info: Mapping[str, Any], namespace: str, api_version: str, kind: str
    ) -> AccessDecision:
        """Ask the API server; raises ``KubeError`` when it cannot answer."""


class KubeAccessReviewer:
    def __init__(self, client: KubeClient) -> None:
        self._client = client

    async def _resource(self, gvk: GroupVersionKind) -> str | None:
        """The plural; ``None`` when the kind is not served; ``*`` when discovery failed."""
        try:
            return (await self._client.mapper.resolve(gvk)).plural
        except UnknownKindError:
            return None
        except KubeError:
            return "*"

    async def may_create(
        self, *, user_info: Mapping[str, Any], namespace: str, api_version: str, kind: str
    ) -> AccessDecision:
        gvk = GroupVersionKind.from_api_version(api_version, kind)
        resource = await self._resource(gvk)
        if resource is None:
            return AccessDecision(allowed=False, resource="*", served=False)
        spec: dict[str, Any] = {
            "resourceAttributes": {
                "namespace": namespace,
                "verb": "create",
                "group": gvk.group,
                "version": gvk.version,
                "resource": resource,
            },
            "user": str(user_info.get("username") or ""),
            "uid": str(user_info.get("uid") or ""),
            "groups": [str(g) for g in user_info.get("groups") or []],
        }
        extra = user_info.get("extra")
        if isinstance(extra, dict) and extra:
            spec["extra"] = {
                str(k): [str(v) for v in values] for k, values in extra.items() if isinstance(values, list)
            }
        answer = await self._client.create(
            SAR_GVK, {"apiVersion": SAR_GVK.api_version, "kind": SAR_GVK.kind, "spec": spec}
        )
        return AccessDecision(allowed=(answer.get("status") or {}).get("allowed") is True, resource=resource)


async def review_components(
    reviewer: AccessReviewer,
    *,
    wrapped: Sequence[WrappedKind],
    user_info: Mapping[str, Any],
    namespace: str,
    timeout: float,  # noqa: ASYNC109 - one deadline for a set of concurrent reviews, then a denial each
) -> dict[int, FieldError]:
    """Component index -> the field error denying it (absent: allowed)."""

    async def one(item: WrappedKind) -> tuple[int, FieldError | None]:
        try:
            decision = await reviewer.may_create(
                user_info=user_info, namespace=namespace, api_version=item.api_version, kind=item.kind
            )
        except (KubeError, ValueError) as exc:
            log.warning("SubjectAccessReview failed", extra={"component": item.path, "error": str(exc)})
            detail = exc.message if isinstance(exc, ApiError) and exc.message else str(exc)
            return item.index, FieldError(item.path, INTERNAL, detail)
        if not decision.served:
            return item.index, not_served(item)
        if decision.allowed:
            return item.index, None
        user = str(user_info.get("username") or "")
        return item.index, not_authorized(item, user=user, resource=decision.resource, namespace=namespace)

    tasks = [asyncio.ensure_future(one(item)) for item in wrapped]
    try:
        async with asyncio.timeout(timeout):
            results = await asyncio.gather(*tasks)
    except TimeoutError:
        for task in tasks:
            task.cancel()
        message = f"SubjectAccessReview did not answer within {timeout:g}s"
        return {item.index: FieldError(item.path, INTERNAL, message) for item in wrapped}
    return {index: error for index, error in results if error is not None}
