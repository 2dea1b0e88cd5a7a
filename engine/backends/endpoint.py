"""Endpoints and key names: what a backend's `base_url` and `api_key_env` may be, and when two
spellings of a server's address name the same endpoint.

Pure functions, no I/O. Nothing here ever puts the value it refuses into its message: a base
URL with ``user:password@`` in it and an `api_key_env` that holds a key rather than a variable
name are secrets that were written in the wrong place, and an error message is printed, logged
and pasted into issues.

**The same endpoint.** Two base URLs name the same endpoint (same run id, same trial ids, so a
rerun resumes) when they differ only by: the case of the scheme and host; the loopback host
spelled ``localhost``, ``127.0.0.1`` (any ``127.x.y.z``) or ``::1``; a default port written out
(``:80`` for http, ``:443`` for https) or left implicit; trailing slashes of the path. Anything
else (another port, path, host name, or http against https) is another endpoint.
"""

from __future__ import annotations

import functools
import ipaddress
import math
import re
from collections import Counter
from urllib.parse import urlsplit

DEFAULT_PORTS = {"http": 80, "https": 443}
LOOPBACK = "127.0.0.1"
_KEY_ENV_RE = re.compile(r"^[A-Za-z_][A-Za-z0-9_]{0,127}$")
# Prefixes of API keys and tokens as providers issue them (OpenAI, Anthropic, GitHub, AWS,
# Google, Hugging Face, GitLab, Slack): a variable name never starts like this.
_KEY_PREFIXES = ("sk-", "sk_", "pk-", "rk-", "ghp_", "gho_", "ghu_", "ghs_", "github_pat_", "akia",
                 "aiza", "hf_", "glpat-", "xoxb-", "xoxp-")


def key_env_problem(name: str) -> str | None:
    """Why `name` cannot be the name of the environment variable holding an API key (None: fine).

    A name is letters, digits and underscores, not starting with a digit, at most 128
    characters; one that looks like a key itself (a provider's key prefix, or long and random:
    mixed case with digits) is refused too. The message never repeats the value.

    Example:
        >>> key_env_problem("OPENAI_API_KEY") is None
        True
        >>> key_env_problem("sk-" + "x" * 40)
        'looks like an API key, not the NAME of an environment variable; put the key in an environment variable and write its name here (the value is not shown)'
    """
    if name.lower().startswith(_KEY_PREFIXES) or _looks_random(name):
        return ("looks like an API key, not the NAME of an environment variable; put the key in an "
                "environment variable and write its name here (the value is not shown)")
    if not _KEY_ENV_RE.match(name):
        return (f"is not an environment variable name (letters, digits and _, not starting with a "
                f"digit, at most 128 characters; {len(name)} characters given, not shown)")
    return None


def _looks_random(name: str) -> bool:
    # Variable names are words (MY_KEY, OPENAI_API_KEY); keys are long runs of mixed-case
    # letters and digits with high per-character entropy.
    if len(name) < 24:
        return False
    mixed = any(c.islower() for c in name) and any(c.isupper() for c in name) and any(c.isdigit() for c in name)
    counts = Counter(name)
    entropy = -sum(n / len(name) * math.log2(n / len(name)) for n in counts.values())
    hex_digest = bool(re.fullmatch(r"[0-9a-fA-F]{32,}", name)) and any(c.isdigit() for c in name)
    return (mixed and "_" not in name) or entropy > 4.5 or hex_digest


def base_url_problem(url: str) -> str | None:
    """Why `url` cannot be a backend's base URL (None: fine).

    The URL itself is never repeated (the error's file:line:column points at it): a URL can
    carry a key in its user part, its query or its path.

    Example:
        >>> base_url_problem("http://127.0.0.1:8080/v1") is None
        True
        >>> base_url_problem("not a url")
        'must be an http:// or https:// URL such as http://127.0.0.1:8080/v1, without spaces (the value is not shown)'
        >>> base_url_problem("https://me:hunter2@example.org/v1")
        'must not hold a user name or password (user:password@); put the key in an environment variable named by api_key_env (the value is not shown)'
    """
    hidden = " (the value is not shown)"
    example = "must be an http:// or https:// URL such as http://127.0.0.1:8080/v1"
    try:
        parts = urlsplit(url.strip())
        port = parts.port
    except ValueError:
        return f"{example}, with a valid host and port{hidden}"
    if parts.username is not None or parts.password is not None or "@" in parts.netloc:
        return ("must not hold a user name or password (user:password@); put the key in an environment "
                f"variable named by api_key_env{hidden}")
    if url != url.strip() or any(c.isspace() or ord(c) < 32 for c in url):
        return f"{example}, without spaces{hidden}"
    if parts.scheme.lower() not in DEFAULT_PORTS or not parts.hostname:
        return f"{example}{hidden}"
    if port == 0:
        return f"{example}; port 0 is not a port{hidden}"
    if parts.query or parts.fragment:
        return f"{example}, without ?query or #fragment (a key belongs in api_key_env){hidden}"
    return None


@functools.lru_cache(maxsize=256)   # pure, and asked once per trial (ids, records): ~0.1 ms each uncached
def normalise_endpoint(url: str) -> str:
    """The canonical spelling of a base URL (see the module docstring for what counts as the same).

    Canonical spellings map to themselves, so the ids of studies that already wrote one stay.

    Example:
        >>> normalise_endpoint("HTTP://LocalHost:80/v1/")
        'http://127.0.0.1/v1'
        >>> normalise_endpoint("https://api.openai.com:443/v1")
        'https://api.openai.com/v1'
        >>> normalise_endpoint("http://[::1]:8080/v1")
        'http://127.0.0.1:8080/v1'
    """
    parts = urlsplit(url.strip())
    scheme = parts.scheme.lower()
    host = (parts.hostname or "").lower()
    if _is_loopback(host):
        host = LOOPBACK
    elif ":" in host:
        host = f"[{host}]"   # an IPv6 address keeps its brackets
    port = parts.port
    netloc = host if port is None or port == DEFAULT_PORTS.get(scheme) else f"{host}:{port}"
    path = parts.path.rstrip("/")
    return f"{scheme}://{netloc}{path}"


def _is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False
