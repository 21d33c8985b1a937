"""What the API's and the dashboard's URL confs share: the `cid` path converter for client-chosen ids, the
URL of one checkpoint (its id is unique within a thread and namespace, so the namespace is in the query).
"""

from __future__ import annotations

from collections.abc import Mapping
from functools import cache
from urllib.parse import urlencode

from django.urls import get_script_prefix, register_converter, reverse

from checkpoints.models import Checkpoint, Workspace
from checkpoints.models.thread import CLIENT_ID_PATTERN


class ClientIdConverter:
    """`<cid:name>`: a public id ([A-Za-z0-9._:-]{1,128}), kept as the string it is."""

    regex = CLIENT_ID_PATTERN

    def to_python(self, value: str) -> str:
        return value

    def to_url(self, value: str) -> str:
        return value


register_converter(ClientIdConverter, "cid")


def checkpoint_url(
    checkpoint: Checkpoint,
    view: str = "api:checkpoint-detail",
    query: Mapping[str, str] | None = None,
    *,
    workspace: Workspace | None = None,
) -> str:
    """The path of one of a checkpoint's routes, with its namespace and `query` in the query string.

    `api:` routes take the namespace as `?namespace=`; `dashboard:` routes as `?ns=`, under the workspace's
    slug (pass `workspace`: the checkpoint's own would cost a query)."""
    kwargs = {"thread_id": checkpoint.thread.thread_id, "checkpoint_id": checkpoint.checkpoint_id}
    namespace_param = "namespace"
    if view.startswith("dashboard:"):
        if workspace is None:
            raise ValueError("A dashboard URL needs the workspace.")
        kwargs["slug"] = workspace.slug
        namespace_param = "ns"
    parameters = {namespace_param: checkpoint.namespace, **(query or {})}
    return f"{_route(view, tuple(kwargs), get_script_prefix()) % kwargs}?{urlencode(parameters)}"


@cache
def _route(view: str, names: tuple[str, ...], _script_prefix: str) -> str:
    """The view's path as a %-template of `names` (reversing per response cost more than the save's SQL took
    to build); ids need no quoting (ClientIdConverter), slugs neither."""
    placeholders = {name: _placeholder(name) for name in names}
    path = reverse(view, kwargs=placeholders).replace("%", "%%")
    for name, placeholder in placeholders.items():
        path = path.replace(placeholder, f"%({name})s")
    return path


def _placeholder(name: str) -> str:
    """A value the `cid` converter accepts, found again in the reversed path (no route holds it)."""
    return f"slot-{name}-slot"
