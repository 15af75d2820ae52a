"""Secrets written into a spec are refused before anything is compiled (issue 28 item 5).

A spec is copied into every manifest it compiles (``spec.json``), and from there into run
folders, reports and exports: a key written into it (a judge's ``backend`` string, a base URL with
credentials) would leave the machine with them. Every string of the spec is scanned with
detect-secrets' vendor detectors (OpenAI, AWS, GitHub, Slack, Stripe, ... tokens: patterns, not
entropy, so the sha256 pins a spec holds are never taken for keys), and a backend's
``api_key_env`` must name an environment variable (a key written there instead is refused). The
message names the key path and line, never the secret.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from functools import lru_cache
from typing import Any

from .errors import Problem

VENDOR_DETECTORS = (
    "AWSKeyDetector", "ArtifactoryDetector", "AzureStorageKeyDetector", "DiscordBotTokenDetector",
    "GitHubTokenDetector", "GitLabTokenDetector", "IbmCloudIamDetector", "JwtTokenDetector", "MailchimpDetector",
    "NpmDetector", "OpenAIDetector", "PrivateKeyDetector", "PypiTokenDetector", "SendGridDetector",
    "SlackDetector", "SquareOAuthDetector", "StripeDetector", "TelegramBotTokenDetector", "TwilioKeyDetector",
)
"""detect-secrets 1.5's detectors of vendors' key formats (no entropy or keyword guessing)."""
_KEY_ENV = re.compile(r"(?:^|[,:])\s*api_key_env\s*=\s*([^,]*)")
_ENV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_VENDOR_PREFIX = re.compile(r"\b(?:sk|pk|rk)-[A-Za-z0-9_-]{16,}|\bhf_[A-Za-z0-9]{20,}|\bAIza[0-9A-Za-z_-]{30,}")
"""Key formats detect-secrets 1.5 does not cover: OpenAI keys without its marker, Anthropic's
``sk-ant-``, Hugging Face's ``hf_``, Google's ``AIza``."""


def strings(value: Any, path: str = "") -> Iterator[tuple[str, str]]:
    """Every string of a parsed TOML document, with its key path (``metric[0].backend``)."""
    if isinstance(value, str):
        yield path, value
    elif isinstance(value, dict):
        for key, inner in value.items():
            yield from strings(inner, f"{path}.{key}" if path else str(key))
    elif isinstance(value, list):
        for index, inner in enumerate(value):
            yield from strings(inner, f"{path}[{index}]")


@lru_cache(maxsize=1)
def _settings() -> dict[str, Any]:
    return {"plugins_used": [{"name": name} for name in VENDOR_DETECTORS]}


def secret_kinds(text: str) -> list[str]:
    """What kinds of secret ``text`` holds (detect-secrets' names), [] when none."""
    from detect_secrets.core.scan import scan_line
    from detect_secrets.settings import transient_settings

    kinds = []
    with transient_settings(_settings()):
        for line in text.splitlines() or [text]:
            kinds += [found.type for found in scan_line(line)]
    if not kinds and _VENDOR_PREFIX.search(text):
        kinds.append("API key")
    for name in _KEY_ENV.findall(text):
        if name.strip() and not _ENV_NAME.fullmatch(name.strip()):
            kinds.append("a key given as api_key_env, which names an environment variable")
    return sorted(set(kinds))


def secret_problems(raw: dict[str, Any], problem: Any) -> list[Problem]:
    """A problem (made by ``problem(key, message, hint)``) for each string of the spec that holds
    a secret."""
    out = []
    for path, text in strings(raw):
        kinds = secret_kinds(text)
        if kinds:
            out.append(problem(path, f"holds what looks like a secret ({', '.join(kinds)}); a spec is copied into "
                                     "every manifest, run and report, so it is refused (the value is not shown)",
                               "put the key in an environment variable and name it: api_key_env=NAME"))
    return out
