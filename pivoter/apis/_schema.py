"""Small builders for OpenAPI v3 schema fragments used in CRDs, so each API reads like its type."""

from __future__ import annotations

from typing import Any

Schema = dict[str, Any]

DNS_LABEL = "^[a-z0-9]([-a-z0-9]*[a-z0-9])?$"


def string(description: str, **extra: Any) -> Schema:
    """A string field."""
    return {"type": "string", "description": description, **extra}


def boolean(description: str, **extra: Any) -> Schema:
    """A boolean field."""
    return {"type": "boolean", "description": description, **extra}


def integer(description: str, **extra: Any) -> Schema:
    """An int64 field."""
    return {"type": "integer", "format": "int64", "description": description, **extra}


def obj(
    description: str,
    properties: dict[str, Schema],
    required: list[str] | None = None,
    **extra: Any,
) -> Schema:
    """An object field with known properties."""
    schema: Schema = {"type": "object", "description": description, "properties": properties}
    if required:
        schema["required"] = required
    schema.update(extra)
    return schema


def array(description: str, items: Schema, **extra: Any) -> Schema:
    """A list field."""
    return {"type": "array", "description": description, "items": items, **extra}


def local_ref(description: str) -> Schema:
    """A reference to an object by name in a namespace the context implies."""
    return obj(
        description,
        {"name": string("Name of the referenced object.")},
        x_map_atomic=True,
    )


def free_form(description: str) -> Schema:
    """Any JSON value, kept as given (e.g. provisioner configuration)."""
    return {
        "description": description,
        "type": "object",
        "x-kubernetes-preserve-unknown-fields": True,
    }


def conditions() -> Schema:
    """The standard ``metav1.Condition`` list, keyed by type."""
    return array(
        "Current observations of the object's state, one per condition type.",
        obj(
            "One aspect of the object's current state.",
            {
                "type": string("Type of the condition.", maxLength=316),
                "status": string("True, False or Unknown.", enum=["True", "False", "Unknown"]),
                "observedGeneration": integer(
                    "The metadata.generation the condition was set from.", minimum=0
                ),
                "lastTransitionTime": string("When the status last changed.", format="date-time"),
                "reason": string(
                    "A CamelCase identifier of why the condition is in this state.",
                    maxLength=1024,
                    minLength=1,
                    pattern="^[A-Za-z]([A-Za-z0-9_,:]*[A-Za-z0-9_])?$",
                ),
                "message": string("What happened, for a person.", maxLength=32768),
            },
            required=["type", "status", "lastTransitionTime", "reason", "message"],
        ),
        **{"x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["type"]},
    )


def finalize(schema: Schema) -> Schema:
    """Translate the builder's ``x_map_atomic`` marker into the Kubernetes extension key."""
    out: Schema = {}
    for key, value in schema.items():
        if key == "x_map_atomic":
            out["x-kubernetes-map-type"] = "atomic"
        elif isinstance(value, dict):
            out[key] = finalize(value)
        elif isinstance(value, list):
            out[key] = [finalize(v) if isinstance(v, dict) else v for v in value]
        else:
            out[key] = value
    return out


def crd(
    *,
    group: str,
    kind: str,
    plural: str,
    version: str,
    spec: Schema,
    status: Schema,
    scope: str = "Cluster",
    short_names: list[str] | None = None,
    categories: list[str] | None = None,
    printer_columns: list[Schema] | None = None,
    max_name_length: int | None = None,
    description: str = "",
) -> Schema:
    """A complete CustomResourceDefinition with one served and stored version."""
    metadata: Schema = {"type": "object"}
    if max_name_length:
        metadata["properties"] = {"name": {"type": "string", "maxLength": max_name_length}}
    names: Schema = {
        "kind": kind,
        "listKind": f"{kind}List",
        "plural": plural,
        "singular": kind.lower(),
    }
    if short_names:
        names["shortNames"] = short_names
    if categories:
        names["categories"] = categories
    version_def: Schema = {
        "name": version,
        "served": True,
        "storage": True,
        "subresources": {"status": {}},
        "schema": {
            "openAPIV3Schema": finalize(
                {
                    "type": "object",
                    "description": description,
                    "properties": {
                        "apiVersion": {"type": "string"},
                        "kind": {"type": "string"},
                        "metadata": metadata,
                        "spec": spec,
                        "status": status,
                    },
                    "required": ["spec"],
                }
            )
        },
    }
    if printer_columns:
        version_def["additionalPrinterColumns"] = printer_columns
    return {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": f"{plural}.{group}"},
        "spec": {"group": group, "names": names, "scope": scope, "versions": [version_def]},
    }


def column(name: str, json_path: str, type_: str = "string", priority: int = 0) -> Schema:
    """An ``additionalPrinterColumns`` entry."""
    col: Schema = {"name": name, "jsonPath": json_path, "type": type_}
    if priority:
        col["priority"] = priority
    return col
