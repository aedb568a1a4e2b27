"""The typed ``metav1.Condition`` of the Workload, queue and MultiKueue models.

Only the shape lives here. Reading one (``find_condition_view``, ``is_true``, ``is_false``) and the
``meta.SetStatusCondition`` rules are ``shared.kube.conditions``', the one implementation the
raw-dict controllers use too, so a model and a wire dict can never disagree on what a condition says
or on when ``lastTransitionTime`` moves. The Workload model's conditions are written by
``shared.workload_state.set_workload_condition``, which applies those rules.
"""

from __future__ import annotations

from shared.models.base import KubeModel

__all__ = ["Condition"]


class Condition(KubeModel):
    type: str
    status: str  # "True" | "False" | "Unknown"
    reason: str = ""
    message: str = ""
    last_transition_time: str | None = None
    observed_generation: int | None = None
