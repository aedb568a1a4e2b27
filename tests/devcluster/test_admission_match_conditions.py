"""AdmissionChain's matchConditions, where only the devcluster can be observed from inside: the
object as mutated so far, reinvocation, DELETE's null object, aggregated errors, compile caching.
(What both servers must agree on is in ``test_webhook_match_conditions.py``.)"""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest

from devcluster.apiserver.admission import AdmissionDenied
from devcluster.apiserver.match_conditions import compiled
from tests.devcluster.test_admission import Cluster, _counting, allow, config, new_job, patching, webhook


@pytest.fixture
async def cluster() -> AsyncIterator[Cluster]:
    instance = Cluster()
    yield instance
    await instance.chain.aclose()


def conditions(*expressions: str) -> list[dict[str, str]]:
    return [{"name": f"c{index}", "expression": expression} for index, expression in enumerate(expressions)]


async def test_conditions_see_the_object_as_mutated_by_earlier_webhooks(cluster: Cluster) -> None:
    calls: list[str] = []
    cluster.webhooks.handlers["/b"] = _counting(
        calls, "b", patching({"op": "add", "path": "/metadata/labels/b", "value": "1"})
    )
    cluster.webhooks.handlers["/a"] = _counting(calls, "a", allow)
    cluster.webhooks.handlers["/v"] = _counting(calls, "v", allow)
    labelled = 'has(object.metadata.labels.b) && object.metadata.labels.b == "1"'
    cluster.mutating = [
        config("1-labels", webhook("b.kb.dev", "/b")),
        config("2-after", webhook("a.kb.dev", "/a", matchConditions=conditions(labelled))),
    ]
    cluster.validating = [config("v", webhook("v.kb.dev", "/v", matchConditions=conditions(labelled)))]

    await cluster.admit()

    assert calls == ["b", "a", "v"]


async def test_a_reinvocation_is_judged_on_the_changed_object(cluster: Cluster) -> None:
    calls: list[str] = []
    cluster.webhooks.handlers["/a"] = _counting(calls, "a", allow)
    cluster.webhooks.handlers["/b"] = _counting(
        calls, "b", patching({"op": "add", "path": "/metadata/labels/b", "value": "1"})
    )
    unlabelled = conditions("!has(object.metadata.labels.b)")
    cluster.mutating = [
        config(
            "1-first", webhook("a.kb.dev", "/a", reinvocationPolicy="IfNeeded", matchConditions=unlabelled)
        ),
        config("2-second", webhook("b.kb.dev", "/b")),
    ]

    result = await cluster.admit()

    assert calls == ["a", "b"]  # without the condition: a, b, a (test_admission's reinvocation test)
    assert result is not None
    assert result["metadata"]["labels"] == {"b": "1"}


async def test_delete_binds_a_null_object_and_the_old_object(cluster: Cluster) -> None:
    hook = webhook(
        "vjob.kb.dev",
        "/validate",
        matchConditions=conditions('object == null && oldObject.metadata.name == "sample"'),
    )
    hook["rules"][0]["operations"] = ["DELETE"]
    cluster.webhooks.handlers["/validate"] = allow
    cluster.validating = [config("kb", hook)]

    await cluster.admit(operation="DELETE", obj=None, old_obj=new_job())

    assert cluster.webhooks.paths() == ["/validate"]


async def test_several_errors_are_aggregated_in_the_forbidden_answer(cluster: Cluster) -> None:
    cluster.webhooks.handlers["/validate"] = allow
    failing = conditions("object.spec.missing == 1", "oldObject.metadata.name == 'x'", "true")
    cluster.validating = [config("kb", webhook("vjob.kb.dev", "/validate", matchConditions=failing))]

    with pytest.raises(AdmissionDenied) as caught:
        await cluster.admit()

    assert (caught.value.code, caught.value.reason) == (403, "Forbidden")
    assert caught.value.message == (
        "jobs.batch \"sample\" is forbidden: [expression 'object.spec.missing == 1' resulted in error: no such key:"
        " missing, expression 'oldObject.metadata.name == 'x'' resulted in error: no such key: metadata]"
    )
    assert caught.value.details == {"name": "sample", "group": "batch", "kind": "jobs"}
    assert cluster.webhooks.calls == []


async def test_a_non_bool_result_is_an_evaluation_error(cluster: Cluster) -> None:
    cluster.webhooks.handlers["/validate"] = allow
    cluster.validating = [
        config("kb", webhook("vjob.kb.dev", "/validate", matchConditions=conditions("object.metadata.name")))
    ]

    with pytest.raises(AdmissionDenied) as caught:
        await cluster.admit()

    assert caught.value.message == (
        "jobs.batch \"sample\" is forbidden: expression 'object.metadata.name' resulted in error:"
        " must evaluate to bool but got string"
    )


async def test_each_expression_is_compiled_once(cluster: Cluster) -> None:
    expression = 'request.userInfo.username != "compiled-once"'
    cluster.webhooks.handlers["/validate"] = allow
    cluster.validating = [
        config("kb", webhook("vjob.kb.dev", "/validate", matchConditions=conditions(expression)))
    ]
    compiled.cache_clear()

    for _ in range(3):
        await cluster.admit()

    assert compiled.cache_info().misses == 1
    assert cluster.webhooks.paths() == ["/validate"] * 3
