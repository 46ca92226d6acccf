"""The scaffold: the fixed reference for one source document, one tuple of items per view.

Stored files and constructors name each view at the top level (`facts=...`, `questions=...`), as
they always have; inside, the scaffold holds a mapping of views, so a view added to the registry
needs no new field. Each view's items are validated with the view's own item model.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, SerializerFunctionWrapHandler, model_serializer, model_validator

from .schemas import ScaffoldNote
from .views import VIEW_SPECS, ViewSpec

_HEAD = ("key", "doc_id", "document_sha256")


class Scaffold(BaseModel):
    """A view is None when its extraction failed; `failures` then says why, and metrics that need
    that view are undefined for this document."""

    model_config = ConfigDict(extra="forbid")

    key: str
    doc_id: str
    document_sha256: str
    views: dict[str, tuple[Any, ...] | None]
    failures: dict[str, str] = Field(default_factory=dict)
    dropped_duplicates: dict[str, int] = Field(default_factory=dict)  # assembly 1 only: `notes` replaced it
    notes: tuple[ScaffoldNote, ...] = ()
    assembly: int = 1  # ASSEMBLY_VERSION when built; files from before notes existed read as 1
    origin: Literal["extracted", "user"] = "extracted"  # extracted by a judge, or given in a scaffold file
    # The document's detected language (method version 6 on); absent from the files of earlier versions.
    language: str | None = None
    language_probability: float | None = None
    # A group's scaffold (groups.py): the union of its members' scaffolds, each item's member document.
    members: tuple[str, ...] = ()
    item_sources: dict[str, str] = Field(default_factory=dict)

    @model_validator(mode="before")
    @classmethod
    def _views_by_name(cls, data: Any) -> Any:
        """Views given at the top level (stored files, constructors) or as `views`, each item
        validated with its view's model."""
        if not isinstance(data, dict):
            return data
        fields = set(cls.model_fields)
        given = dict(data.get("views") or {})
        rest: dict[str, Any] = {}
        for key, value in data.items():
            if key in fields:
                rest[key] = value
            elif key in VIEW_SPECS:
                given[key] = value
            else:
                raise ValueError(f"{key!r} is neither a scaffold field nor a registered view "
                                 f"(views: {', '.join(VIEW_SPECS)})")
        views: dict[str, Any] = {}
        for name, items in given.items():
            if name not in VIEW_SPECS:
                raise ValueError(f"{name!r} is not a registered view (views: {', '.join(VIEW_SPECS)})")
            model = VIEW_SPECS[name].item_model
            views[name] = None if items is None else tuple(
                item if isinstance(item, model) else model.model_validate(item) for item in items)
        return {**rest, "views": views}

    @model_serializer(mode="wrap")
    def _views_at_top_level(self, handler: SerializerFunctionWrapHandler) -> dict[str, Any]:
        """The stored shape: each view under its own name after the document's identity."""
        data = handler(self)
        views = data.pop("views")
        for added in ("language", "language_probability", "members", "item_sources"):  # absent from older files
            if data.get(added) in (None, (), {}):
                data.pop(added, None)
        return {**{k: data.pop(k) for k in _HEAD}, **views, **data}

    def model_copy(self, *, update: Mapping[str, Any] | None = None, deep: bool = False) -> Scaffold:
        """A copy; views in `update` may be named at the top level, as in the constructor."""
        named = {k: v for k, v in (update or {}).items() if k in VIEW_SPECS}
        if named:
            update = {**{k: v for k, v in (update or {}).items() if k not in named}, "views": {**self.views, **named}}
        return super().model_copy(update=update, deep=deep)

    def view(self, name: str) -> tuple[Any, ...] | None:
        """A view's items; None when its extraction failed or it was not given."""
        return self.views.get(name)

    def items(self, name: str) -> tuple[Any, ...]:
        """A view's items; none when it failed."""
        return self.views.get(name) or ()

    def each_view(self) -> Iterator[tuple[ViewSpec, tuple[Any, ...] | None]]:
        """Each of its views with its items (None where it failed), in scaffold order."""
        for name, items in self.views.items():
            yield VIEW_SPECS[name], items
