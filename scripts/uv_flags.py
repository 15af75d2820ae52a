"""Prints, one per line, the `uv pip install` flags that give uv the package sources pip is
configured with here (pip.conf files and PIP_* variables, as `pip config list` shows them).

uv reads none of pip's configuration, so without this it would look only at PyPI: on a machine
whose pip finds torch's CPU wheel in a local folder and mirrors in local indexes, uv would miss
them (or pick a CUDA build). Indexes are searched for the best match across all of them, as pip
does (uv's default takes a package from the first index that has it). Exits 1, printing nothing,
when pip's configuration holds a setting this script does not translate, so that
scripts/setup.sh falls back to pip itself rather than install from other sources."""

from __future__ import annotations

import shlex
import subprocess
import sys

# pip setting -> uv flag; a value holding several entries (space-separated) gives one flag each.
TRANSLATED = {"index-url": "--index-url", "extra-index-url": "--extra-index-url",
              "find-links": "--find-links", "constraint": "--constraint", "cert": "--cert"}
# Settings that change nothing about which files are installed.
IGNORED = {"default-timeout", "timeout", "disable-pip-version-check", "no-cache-dir", "progress-bar",
           "quiet", "verbose", "no-input", "root-user-action", "no-color", "trusted-host", "retries",
           "break-system-packages"}


def pip_settings(python: str) -> dict[str, list[str]]:
    """pip's effective settings: name -> values, later sources (environment) last."""
    listed = subprocess.run([python, "-m", "pip", "config", "list"], capture_output=True, text=True, check=True)
    settings: dict[str, list[str]] = {}
    for line in listed.stdout.splitlines():
        key, _, value = line.partition("=")
        name = key.rsplit(".", 1)[-1]
        settings.setdefault(name, []).extend(shlex.split(value)[0].split() if value else [])
    return settings


def uv_flags(settings: dict[str, list[str]]) -> list[str] | None:
    """The uv flags for pip's settings, or None when one of them is not translated."""
    flags = ["--index-strategy", "unsafe-best-match"]
    for name, values in settings.items():
        if name in IGNORED:
            continue
        if name not in TRANSLATED:
            return None
        for value in dict.fromkeys(values):  # a setting in pip.conf and in PIP_* is listed twice
            flags += [TRANSLATED[name], value]
    return flags


def main() -> int:
    flags = uv_flags(pip_settings(sys.argv[1] if len(sys.argv) > 1 else sys.executable))
    if flags is None:
        return 1
    print("\n".join(flags))
    return 0


if __name__ == "__main__":
    sys.exit(main())
