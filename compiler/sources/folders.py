"""Folders of media files: one record per image (``image_folder``) or recording
(``audio_folder``), in sorted order, id = the path relative to the folder. With ``labels``, each
record's ``label`` is the name of the folder its file is in (ImageNet / ESC-50 style layouts).
"""

from __future__ import annotations

from pathlib import PurePosixPath
from typing import ClassVar

from pydantic import Field

from ..errors import Problem, SourceError
from ..paths import check_within_roots, relative_to_roots
from ..values import Record
from .base import SOURCES, LoadedSource, SourceContext, SourceLoader, SourceParams
from .tables import At, MediaFiles, RowError, collect, folder_digest


class Params(SourceParams):
    folder: str = Field(description="the folder, read recursively")
    extensions: list[str] | None = Field(None, min_length=1, description="file extensions to read")
    labels: bool = Field(False, description="label = the name of each file's parent folder")


FolderParams = Params  # for annotations: in the class body below, ``Params`` is the ClassVar


class FolderSource(SourceLoader):
    """One record per file of a folder with one of ``extensions``, decoded as ``kind``."""

    kind: ClassVar[str]
    extensions: ClassVar[tuple[str, ...]]
    version = "1.0.0"
    Params = Params
    record_id = "the file's path relative to the folder"
    record_fields = {"path": "the file's path relative to the folder",
                     "label": "with labels = true: the name of the folder the file is in"}

    def load(self, params: FolderParams, ctx: SourceContext) -> LoadedSource:
        folder = ctx.resolve(params.folder, key="source.folder")
        wanted = {f".{e.lower().lstrip('.')}" for e in (params.extensions or self.extensions)}
        paths = sorted((p for p in folder.rglob("*") if p.is_file() and p.suffix.lower() in wanted),
                       key=lambda p: p.relative_to(folder).as_posix())
        if not paths:
            raise SourceError(Problem(f"no {', '.join(sorted(wanted))} files in {folder}",
                                      key="source.folder"))
        for path in paths:  # a symlink to a file outside the data roots is never read
            name = f"{params.folder.rstrip('/')}/{path.relative_to(folder).as_posix()}"
            check_within_roots(path, ctx.roots, "source.folder", name, ctx.spec_file)
        files = MediaFiles(ctx, params.folder, "source.folder")
        records = collect(ctx, ((At(p), p.relative_to(folder).as_posix()) for p in paths),
                          lambda name: self._record(name, files, params.labels))
        return LoadedSource(records, [folder_digest(relative_to_roots(folder, ctx.roots), folder, paths)])

    def _record(self, name: str, files: MediaFiles, labels: bool) -> Record:
        ref = files.image(name) if self.kind == "image" else files.audio(name)
        fields = {"path": name}
        if labels:
            parent = PurePosixPath(name).parent.name
            if not parent:
                raise RowError("with labels = true, every file must be inside a label folder")
            fields["label"] = parent
        return Record(id=name, fields=fields, media={self.kind: ref})


@SOURCES.add("image_folder")
class ImageFolderSource(FolderSource):
    """One record per image file of a folder (decoded to RGB)."""

    kind = "image"
    record_media = {"image": "the image file (decoded to RGB)"}
    extensions = ("jpg", "jpeg", "png", "bmp", "gif", "webp", "tif", "tiff")


@SOURCES.add("audio_folder")
class AudioFolderSource(FolderSource):
    """One record per audio file of a folder (stored as 16 kHz mono WAV)."""

    kind = "audio"
    record_media = {"audio": "the audio file (as 16 kHz mono WAV)"}
    extensions = ("wav", "flac", "ogg", "mp3")
