"""Server-side scan planning (plan, fetch plan, cancel, fetch tasks) on neve's planner.

The server plans with :class:`neve.planning.scan.ScanPlan` (manifests read through its
process-wide manifest cache, so a table planned once is planned again from memory) and
answers ``completed`` at once, with one file scan task per data file (clients split
files themselves), the delete files they reference, and each file's residual filter.
Column statistics are sent for the ``stats-fields`` the client asks for, none
otherwise.

A plan id is the plan request itself, encoded: any server process on the same database
answers a fetch of it, and there is no state to cancel. An incremental plan
(``start-snapshot-id`` and ``end-snapshot-id``) gives the data files the append
snapshots in that range added.
"""

from __future__ import annotations

import base64
import json
from collections.abc import Mapping
from typing import Any

from neve.catalog.rest_expressions import expression_from_json, expression_to_json
from neve.errors import ValidationError
from neve.planning.incremental import append_snapshots, plan_appended_files
from neve.planning.scan import ScanPlan
from neve.planning.tasks import FileScanTask
from neve.server.config import READ
from neve.server.http import Call, Reply, RestError
from neve.spec.content_file_json import content_file_to_json, partition_to_json
from neve.spec.manifest import DataFile
from neve.spec.schema import Schema
from neve.spec.table_metadata import TableMetadata
from neve.table.table import Table

__all__ = ["HANDLERS", "scan_tasks_json"]


def _request(data: Mapping[str, Any]) -> dict[str, Any]:
    allowed = {
        "snapshot-id",
        "select",
        "filter",
        "case-sensitive",
        "use-snapshot-schema",
        "start-snapshot-id",
        "end-snapshot-id",
        "stats-fields",
        "min-rows-requested",
    }
    unknown = set(data) - allowed
    if unknown:
        raise RestError(
            400, "BadRequestException", f"unknown plan request fields {sorted(unknown)}"
        )
    if data.get("start-snapshot-id") is not None and data.get("end-snapshot-id") is None:
        raise RestError(400, "BadRequestException", "start-snapshot-id needs end-snapshot-id")
    if data.get("snapshot-id") is not None and data.get("start-snapshot-id") is not None:
        raise RestError(
            400, "BadRequestException", "give snapshot-id or an incremental range, not both"
        )
    return dict(data)


def _stats_ids(schema: Schema, fields: Any, case_sensitive: bool) -> set[int]:
    if not fields:
        return set()
    if not isinstance(fields, list):
        raise ValidationError("stats-fields must be a list of field names")
    return {schema.find_field(str(f), case_sensitive).field_id for f in fields}


def scan_tasks_json(
    md: TableMetadata, schema: Schema, tasks: list[FileScanTask], stats: set[int]
) -> dict[str, Any]:
    """``file-scan-tasks`` (one per data file) and the ``delete-files`` they use; many
    files share a partition and a residual, so their JSON is made once each."""
    types = {sid: spec.partition_type(md.schema()) for sid, spec in md.specs_by_id.items()}
    partitions: dict[tuple[int, Any], list[Any]] = {}
    residuals: dict[int, Any] = {}
    deletes: dict[tuple[str, int | None], int] = {}
    delete_json: list[dict[str, Any]] = []
    out: list[dict[str, Any]] = []
    seen: set[str] = set()
    none: set[int] = set()

    def partition(f: DataFile) -> list[Any]:
        key = (f.spec_id, f.partition)
        try:
            return partitions[key]
        except KeyError:
            made = partitions[key] = partition_to_json(f.partition, types[f.spec_id])
            return made
        except TypeError:  # an unhashable value
            return partition_to_json(f.partition, types[f.spec_id])

    for t in tasks:
        if t.file.file_path in seen:
            continue  # a split of a file already given
        seen.add(t.file.file_path)
        refs = []
        for d in t.delete_files:
            key = (d.file_path, d.content_offset)
            if key not in deletes:
                deletes[key] = len(delete_json)
                delete_json.append(
                    content_file_to_json(
                        d, types[d.spec_id], schema, stats=none, partition=partition(d)
                    )
                )
            refs.append(deletes[key])
        f = t.file
        task: dict[str, Any] = {
            "data-file": content_file_to_json(
                f, types[f.spec_id], schema, stats=stats, partition=partition(f)
            )
        }
        if refs:
            task["delete-file-references"] = refs
        residual = residuals.get(id(t.residual))
        if residual is None:
            residual = residuals[id(t.residual)] = expression_to_json(t.residual)
        task["residual-filter"] = residual
        out.append(task)
    body: dict[str, Any] = {"file-scan-tasks": out}
    if delete_json:
        body["delete-files"] = delete_json
    return body


def _plan(table: Table, req: Mapping[str, Any]) -> dict[str, Any]:
    md = table.metadata
    cs = bool(req.get("case-sensitive", True))
    schema = md.schema()
    row_filter = expression_from_json(req.get("filter", True), schema, cs)
    start = req.get("start-snapshot-id")
    if start is not None:
        rng = append_snapshots(
            md, start_snapshot_id=int(start), end_snapshot_id=int(req["end-snapshot-id"])
        )
        tasks = plan_appended_files(md, table.io, rng.appends, filter=row_filter, case_sensitive=cs)
    else:
        snapshot_id = req.get("snapshot-id")
        plan = ScanPlan(
            md,
            table.io,
            filter=row_filter,
            snapshot_id=int(snapshot_id) if snapshot_id is not None else None,
            case_sensitive=cs,
        )
        if req.get("use-snapshot-schema") and snapshot_id is not None:
            schema = plan.table_schema
        tasks = plan.plan_files()
    stats = _stats_ids(schema, req.get("stats-fields"), cs)
    return scan_tasks_json(md, schema, tasks, stats)


def _plan_id(ident: tuple[str, ...], req: Mapping[str, Any], snapshot_id: int | None) -> str:
    pinned = dict(req)
    if pinned.get("start-snapshot-id") is None and pinned.get("snapshot-id") is None:
        pinned["snapshot-id"] = snapshot_id
    raw = json.dumps({"t": list(ident), "r": pinned}, separators=(",", ":"))
    return base64.urlsafe_b64encode(raw.encode()).decode().rstrip("=")


def _decode_plan_id(plan_id: str, ident: tuple[str, ...]) -> dict[str, Any]:
    try:
        data = json.loads(base64.urlsafe_b64decode(plan_id + "=" * (-len(plan_id) % 4)))
        if tuple(data["t"]) != ident or not isinstance(data["r"], dict):
            raise ValueError("another table's plan")
        return dict(data["r"])
    except (ValueError, KeyError, TypeError) as exc:
        raise RestError(
            404, "NoSuchPlanIdException", f"no plan {plan_id!r} for this table"
        ) from exc


def plan_table_scan(call: Call) -> Reply:
    ident = call.ident()
    call.authorize(READ, "table", ident)
    req = _request(call.body_object() if call.raw_body else {})
    table = call.catalog.load_table(ident)
    body = _plan(table, req)
    body["status"] = "completed"
    body["plan-id"] = _plan_id(ident, req, table.metadata.current_snapshot_id)
    return Reply(200, body)


def fetch_planning_result(call: Call) -> Reply:
    ident = call.ident()
    call.authorize(READ, "table", ident)
    req = _decode_plan_id(call.params["plan-id"], ident)
    body = _plan(call.catalog.load_table(ident), req)
    body["status"] = "completed"
    return Reply(200, body)


def cancel_planning(call: Call) -> Reply:
    ident = call.ident()
    call.authorize(READ, "table", ident)
    _decode_plan_id(call.params["plan-id"], ident)
    return Reply(204)


def fetch_scan_tasks(call: Call) -> Reply:
    ident = call.ident()
    call.authorize(READ, "table", ident)
    token = call.body_object().get("plan-task")
    if not isinstance(token, str):
        raise RestError(400, "BadRequestException", "fetch tasks needs a plan-task")
    req = _decode_plan_id(token, ident)
    return Reply(200, _plan(call.catalog.load_table(ident), req))


HANDLERS: list[tuple[str, str, Any, bool]] = [
    ("POST", "namespaces/{namespace}/tables/{table}/plan", plan_table_scan, False),
    ("GET", "namespaces/{namespace}/tables/{table}/plan/{plan-id}", fetch_planning_result, False),
    ("DELETE", "namespaces/{namespace}/tables/{table}/plan/{plan-id}", cancel_planning, False),
    ("POST", "namespaces/{namespace}/tables/{table}/tasks", fetch_scan_tasks, False),
]
