"""Who is asking and what they may do: bearer-token authentication, SubjectAccessReview answers from a
static policy and RBAC.
"""

__all__: list[str] = []
