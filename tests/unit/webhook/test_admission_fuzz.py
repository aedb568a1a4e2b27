"""Property: whatever AdmissionReview arrives, ``/mutate`` and ``/validate`` answer 200 or 400.

Cases come from ``tests.fuzz.admission_cases`` (the generator ``tests/fuzz/webhook_fuzz.py`` runs 100,000
times against a webhook process): seeds for every served kind and operation, mutated in the
envelope, deep inside ``object``/``oldObject``, in labels/annotations/ownerReferences and at the
byte level. Each goes through the ASGI application in process, and the answer must be

* HTTP 400 with a one-line reason, or
* HTTP 200 with an AdmissionReview for the same uid whose denial (if any) is a 400/403 naming the
  field (never the 500 a raising rule produces) and whose patch (if any) applies to the object.

``make test`` runs a bounded, derandomized number of examples (the same ones every run: never a
flaky failure; ``database=None``: no ``.hypothesis`` directory). A failure prints the shrunk case.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import orjson
import pytest
from hypothesis import HealthCheck, given, settings

from tests.fuzz.admission_answers import answer_problem
from tests.fuzz.admission_cases import Case, cases
from tests.fuzz.admission_seeds import fuzz_handler, seed_reviews
from tests.unit.webhook.helpers import call
from webhook.serving.asgi_app import create_app

FUZZ = settings(
    max_examples=300,
    deadline=None,
    database=None,
    derandomize=True,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)

APP = create_app(handler=fuzz_handler(), readiness_checks={})


def send(case: Case) -> str | None:
    status, payload, _ = asyncio.run(call(APP, method="POST", path=case.path, chunks=[case.body]))
    assert status is not None
    return answer_problem(case, status=status, payload=payload)


def test_every_seed_is_a_well_formed_review_the_webhook_answers_without_denial() -> None:
    """The seeds reach the rules: no 400, no denial, so every mutation starts from a valid review."""
    for review in seed_reviews():
        for path in ("/mutate", "/validate"):
            case = Case(path=path, body=orjson.dumps(review))
            status, payload, _ = asyncio.run(call(APP, method="POST", path=path, chunks=[case.body]))
            assert status == 200, payload
            assert answer_problem(case, status=status, payload=payload) is None
            response: dict[str, Any] = orjson.loads(payload)["response"]
            assert response["allowed"] is True, (review["request"]["kind"], path, response)


@FUZZ
@given(case=cases())
def test_generated_and_mutated_reviews_get_200_or_400(case: Case) -> None:
    assert send(case) is None


@pytest.mark.needs_shared
def test_mutations_of_the_captured_review_get_200_or_400(shared_dir: Path) -> None:
    """The real kube-apiserver AdmissionReview from ``../shared`` as the only seed."""
    captured = orjson.loads((shared_dir / "fixtures" / "admissionreview-job-create.json").read_bytes())

    @FUZZ
    @given(case=cases(seeds=[captured]))
    def run(case: Case) -> None:
        assert send(case) is None

    run()
