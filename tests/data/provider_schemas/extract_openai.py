"""Extract the parts of OpenAI's published OpenAPI document that psyq's requests must satisfy.

Source: https://github.com/openai/openai-openapi (MIT, "Copyright (c) OpenAI (https://openai.com)").
Writes, into ``openai/`` next to this script, JSON Schema (draft 2020-12) documents that the
``jsonschema`` package validates:

- ``chat_completion_request.schema.json``  CreateChatCompletionRequest + every schema it reaches
- ``chat_completion_response.schema.json`` CreateChatCompletionResponse + every schema it reaches
- ``batch_create_request.schema.json``     CreateBatchRequest (the body of POST /v1/batches)
- ``embedding_request.schema.json``        CreateEmbeddingRequest (the body of POST /v1/embeddings)
- ``embedding_response.schema.json``       CreateEmbeddingResponse + every schema it reaches
- ``batch_request_input.schema.json``      BatchRequestInput (one line of a batch input file);
  the current document no longer has it, so it comes from an older commit of the same repository
  (``--batch-commit``, default 498c71dd, the last commit whose openapi.yaml still holds it)
- ``examples.json``  the example replies (and the JSON bodies of the curl example requests) the
  document publishes for POST /chat/completions (``x-oaiMeta.examples``) and the example lines of
  BatchRequestInput / BatchRequestOutput

OpenAPI specifics are turned into plain JSON Schema: ``$ref: #/components/schemas/X`` becomes
``#/$defs/X``; ``nullable: true`` adds ``"null"`` to ``type`` (and ``None`` to ``enum``) or, next to
a ``$ref``/composition, wraps the schema in ``anyOf: [..., {"type": "null"}]``; ``discriminator``
(an OpenAPI hint; the ``oneOf`` it sits on still decides) and every ``x-*`` extension are dropped,
as are the prose keywords ``description``, ``title``, ``example``, ``examples`` and
``externalDocs`` (to keep the files small: read the full document for them). ``deprecated`` and
``default`` are kept: the tests report a deprecated field psyq sends. Nothing else is changed;
in particular no object is closed that the document leaves open (it has no
``additionalProperties: false`` among these schemas), so the tests check separately that every
key psyq sends is a property the schema declares.

Re-run on your own clone:

    git clone https://github.com/openai/openai-openapi /tmp/openai-openapi
    python tests/data/provider_schemas/extract_openai.py --repo /tmp/openai-openapi
    # or, without git:  --spec openapi.json --batch-spec old-openapi.yaml --commit C --batch-commit C2
"""

from __future__ import annotations

import argparse
import datetime
import json
import re
import subprocess
from pathlib import Path
from typing import Any

import yaml

HERE = Path(__file__).resolve().parent
OUT = HERE / "openai"
REPO_URL = "https://github.com/openai/openai-openapi"
# The last commit whose openapi.yaml still defines BatchRequestInput / BatchRequestOutput (the
# next commit, e1cb7a86 of 2025-06-17, removed the document; the one published since lacks them).
BATCH_COMMIT = "498c71ddf6f1c45b983f972ccabca795da211a3e"
ROOTS = {
    "chat_completion_request.schema.json": "CreateChatCompletionRequest",
    "chat_completion_response.schema.json": "CreateChatCompletionResponse",
    "batch_create_request.schema.json": "CreateBatchRequest",
    "embedding_request.schema.json": "CreateEmbeddingRequest",
    "embedding_response.schema.json": "CreateEmbeddingResponse",
}
BATCH_ROOTS = {"batch_request_input.schema.json": "BatchRequestInput"}
PROSE = {"description", "title", "example", "examples", "externalDocs", "discriminator", "xml"}
LITERAL = {"default", "enum", "const"}        # values, not schemas: copied as they are
SCHEMA_MAPS = {"properties", "patternProperties", "$defs", "definitions", "dependentSchemas"}


def load_document(text: str) -> dict[str, Any]:
    """An OpenAPI document from JSON or YAML text."""
    text_start = text.lstrip()[:1]
    if text_start == "{":
        return json.loads(text)
    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    return yaml.load(text, Loader=loader)   # noqa: S506 - a safe loader


def convert(node: Any) -> Any:
    """One OpenAPI 3.x schema (and everything under it) as JSON Schema 2020-12."""
    if isinstance(node, list):
        return [convert(n) for n in node]
    if not isinstance(node, dict):
        return node
    out: dict[str, Any] = {}
    for key, value in node.items():
        if key in PROSE or key.startswith("x-") or key == "nullable":
            continue
        if key == "$ref":
            out[key] = value.replace("#/components/schemas/", "#/$defs/")
        elif key in LITERAL:
            out[key] = value
        elif key in SCHEMA_MAPS and isinstance(value, dict):
            out[key] = {name: convert(s) for name, s in value.items()}
        else:
            out[key] = convert(value)
    if node.get("nullable") is True:
        out = with_null(out)
    return out


def with_null(schema: dict[str, Any]) -> dict[str, Any]:
    """`schema` that also accepts JSON null (OpenAPI 3.0's ``nullable: true``)."""
    composed = any(k in schema for k in ("$ref", "allOf", "anyOf", "oneOf"))
    if "type" in schema and not composed:
        types = schema["type"] if isinstance(schema["type"], list) else [schema["type"]]
        out = {**schema, "type": types + (["null"] if "null" not in types else [])}
        if "enum" in out and None not in out["enum"]:
            out["enum"] = [*out["enum"], None]
        return out
    keep = {k: schema[k] for k in ("deprecated", "default") if k in schema}
    inner = {k: v for k, v in schema.items() if k not in keep}
    return {**keep, "anyOf": [inner, {"type": "null"}]}


def refs(node: Any) -> set[str]:
    """Names of the component schemas `node` refers to."""
    found: set[str] = set()
    if isinstance(node, dict):
        for key, value in node.items():
            if key == "$ref" and isinstance(value, str) and value.startswith("#/components/schemas/"):
                found.add(value.rsplit("/", 1)[1])
            elif key not in LITERAL:
                found |= refs(value)
    elif isinstance(node, list):
        for value in node:
            found |= refs(value)
    return found


def closure(schemas: dict[str, Any], root: str) -> list[str]:
    """`root` and every component schema it reaches, sorted."""
    seen: set[str] = set()
    todo = [root]
    while todo:
        name = todo.pop()
        if name in seen:
            continue
        seen.add(name)
        todo.extend(refs(schemas[name]) - seen)
    return sorted(seen)


def schema_document(schemas: dict[str, Any], root: str, comment: str) -> dict[str, Any]:
    """A self-contained JSON Schema document for `root` (its reachable schemas under $defs)."""
    return {"$schema": "https://json-schema.org/draft/2020-12/schema", "$comment": comment,
            "$ref": f"#/$defs/{root}", "$defs": {name: convert(schemas[name]) for name in closure(schemas, root)}}


def curl_body(curl: str) -> Any:
    """The JSON body of a published ``curl … -d '{…}'`` example (None when it has none)."""
    match = re.search(r"-d '(.*)'", curl, re.S)
    if not match:
        return None
    try:
        return json.loads(match.group(1))
    except ValueError:
        return None


def json_or_none(text: Any) -> Any:
    if not isinstance(text, str):
        return text
    try:
        return json.loads(text)
    except ValueError:
        return None


def chat_examples(doc: dict[str, Any]) -> list[dict[str, Any]]:
    """The examples of POST /chat/completions: title, request body (from curl) and reply."""
    meta = doc["paths"]["/chat/completions"]["post"].get("x-oaiMeta", {})
    out = []
    for example in meta.get("examples", []):
        request = example.get("request")
        curl = request.get("curl") if isinstance(request, dict) else None
        reply = json_or_none(example.get("response"))
        out.append({"title": example.get("title"), "request_body": curl_body(curl) if curl else None,
                    "response": reply,
                    "note": None if reply is not None else "the published reply is not one JSON body (e.g. a stream)"})
    return out


def git_show(repo: Path, commit: str, path: str) -> str:
    return subprocess.run(["git", "-C", str(repo), "show", f"{commit}:{path}"], check=True,
                          capture_output=True, text=True).stdout


def git_rev(repo: Path, commit: str) -> str:
    return subprocess.run(["git", "-C", str(repo), "rev-parse", commit], check=True,
                          capture_output=True, text=True).stdout.strip()


def write_json(path: Path, data: Any) -> None:
    path.write_text(json.dumps(data, indent=1, ensure_ascii=False, sort_keys=False) + "\n", encoding="utf-8")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repo", type=Path, help="a clone of openai/openai-openapi (read with git show)")
    parser.add_argument("--commit", default="HEAD", help="commit of the current document (default HEAD)")
    parser.add_argument("--batch-commit", default=BATCH_COMMIT, help="commit of the document with BatchRequestInput")
    parser.add_argument("--spec", type=Path, help="openapi.json / openapi.yaml file (instead of --repo)")
    parser.add_argument("--batch-spec", type=Path, help="older openapi.yaml with BatchRequestInput (instead of --repo)")
    parser.add_argument("--out", type=Path, default=OUT)
    args = parser.parse_args()
    if args.repo:
        commit, batch_commit = git_rev(args.repo, args.commit), git_rev(args.repo, args.batch_commit)
        doc = load_document(git_show(args.repo, commit, "openapi.json"))
        old = load_document(git_show(args.repo, batch_commit, "openapi.yaml"))
        where, old_where = f"openapi.json @ {commit}", f"openapi.yaml @ {batch_commit}"
    elif args.spec and args.batch_spec:
        commit, batch_commit = args.commit, args.batch_commit
        doc, old = load_document(args.spec.read_text()), load_document(args.batch_spec.read_text())
        where, old_where = f"{args.spec.name} @ {commit}", f"{args.batch_spec.name} @ {batch_commit}"
    else:
        parser.error("give --repo, or --spec and --batch-spec")
    args.out.mkdir(parents=True, exist_ok=True)
    today = datetime.date.today().isoformat()
    schemas, old_schemas = doc["components"]["schemas"], old["components"]["schemas"]
    for file, root in ROOTS.items():
        comment = (f"{root} from {REPO_URL} {where} (OpenAPI {doc.get('openapi')}, info.version "
                   f"{doc.get('info', {}).get('version')}), extracted {today} by extract_openai.py; see SOURCE.md")
        write_json(args.out / file, schema_document(schemas, root, comment))
    for file, root in BATCH_ROOTS.items():
        comment = (f"{root} from {REPO_URL} {old_where} (info.version {old.get('info', {}).get('version')}), "
                   f"extracted {today} by extract_openai.py; the current document no longer defines it; see SOURCE.md")
        write_json(args.out / file, schema_document(old_schemas, root, comment))
    examples = {
        "$comment": f"Examples published in {REPO_URL}: chat from {where}, batch lines from {old_where}; "
                    f"extracted {today} by extract_openai.py",
        "chat_completions": chat_examples(doc),
        "batch_request_input": json_or_none(old_schemas["BatchRequestInput"].get("x-oaiMeta", {}).get("example")),
        "batch_request_output": json_or_none(old_schemas["BatchRequestOutput"].get("x-oaiMeta", {}).get("example")),
    }
    write_json(args.out / "examples.json", examples)
    for file in [*ROOTS, *BATCH_ROOTS, "examples.json"]:
        print(f"{args.out / file}: {(args.out / file).stat().st_size} bytes")


if __name__ == "__main__":
    main()
