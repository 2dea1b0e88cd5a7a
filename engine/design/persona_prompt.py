"""A persona's system prompt: the cohort's template (or :data:`DEFAULT_TEMPLATE`) filled with the
persona's id, backstory and attributes; the checks of a template's placeholders.
"""

from __future__ import annotations

import difflib
import re
import string
from collections.abc import Collection, Iterable

from psyq.engine.design.persona import BASELINE, FIXED_PLACEHOLDERS, Persona

DEFAULT_TEMPLATE = """\
You are answering a questionnaire as the person described below, not as yourself.

{attributes}

{backstory}

Answer every question in the first person, as this person would answer it. Do not mention \
being an AI or a language model.
"""


def _show(value: str | int | float | bool) -> str:
    # A prompt reads "smoker: yes", not Python's "True".
    if isinstance(value, bool):
        return "yes" if value else "no"
    return str(value)


def _reword_brace_error(exc: ValueError) -> str:
    text = str(exc)
    if "Single '}'" in text:
        return "a '}' has no matching '{': write '}}' for a literal brace"
    if "Single '{'" in text or "expected '}'" in text:
        return "a '{' is never closed: write '{{' for a literal brace"
    return f"the braces do not match ({text}): write '{{{{' and '}}}}' for literal braces"


def template_fields(template: str) -> list[str]:
    """The placeholder names of `template`, each once, in order of first use.

    Raises ValueError if the braces do not match.

    Example:
        >>> template_fields("You are {age}. {attributes} {{not this}} {age}")
        ['age', 'attributes']
    """
    names: list[str] = []
    for _, name, _, _ in string.Formatter().parse(template):
        if name is not None and name not in names:
            names.append(name)
    return names


def check_template(template: str, attributes: Collection[str] | None = None) -> list[str]:
    """Problems of a template, as messages. With `attributes` (the names some persona has),
    placeholders that are neither those nor {id}, {backstory}, {attributes} are reported too.

    Example:
        >>> check_template("You are {agee} years old.", attributes=["age", "gender"])
        ["unknown placeholder {agee}: no persona has an attribute 'agee' (did you mean 'age'?)"]
    """
    try:
        parsed = list(string.Formatter().parse(template))
    except ValueError as exc:
        return [_reword_brace_error(exc)]
    problems = []
    for _, name, spec, conversion in parsed:
        if name is None:
            continue
        written = "{" + name + (f"!{conversion}" if conversion else "") + (f":{spec}" if spec else "") + "}"
        if name == "" or name.isdigit():
            problems.append(f"placeholder {written} needs a name: {{id}}, {{backstory}}, "
                            "{attributes} or an attribute name")
        elif conversion or spec or any(c in name for c in ".[]"):
            problems.append(f"placeholder {written} must be a plain name such as {{age}} "
                            "(no '.', '[', '!' or ':')")
    if problems or attributes is None:
        return problems
    return [unknown_placeholder_message(name, attributes) for name in unknown_placeholders(template, attributes)]


def unknown_placeholders(template: str, attributes: Collection[str]) -> list[str]:
    """Placeholder names of a (well-formed) template that no persona can fill."""
    return [n for n in template_fields(template) if n not in FIXED_PLACEHOLDERS and n not in attributes]


def unknown_placeholder_message(name: str, attributes: Iterable[str]) -> str:
    """Why {name} cannot be filled, with the closest known name as a hint."""
    close = difflib.get_close_matches(name, [*FIXED_PLACEHOLDERS, *attributes], n=1)
    hint = f" (did you mean '{close[0]}'?)" if close else ""
    return f"unknown placeholder {{{name}}}: no persona has an attribute '{name}'{hint}"


def render_system_prompt(persona: Persona, template: str) -> str | None:
    """The system prompt for `persona`; None for :data:`BASELINE` (the model as itself).

    Blank lines left by an empty placeholder (no backstory, no attributes) collapse to one, and
    the prompt is stripped at both ends.

    Example:
        >>> p = Persona(id="p01", attributes={"age": 34, "smoker": False})
        >>> render_system_prompt(p, "{id} is {age}.\\n\\n{attributes}\\n\\n{backstory}")
        'p01 is 34.\\n\\n- age: 34\\n- smoker: no'
    """
    if persona.id == BASELINE.id:
        return None
    if problems := check_template(template, persona.attributes):
        raise ValueError(f"persona '{persona.id}': " + "; ".join(problems))
    values = {name: _show(value) for name, value in persona.attributes.items()}
    values["id"] = persona.id
    values["backstory"] = persona.backstory or ""
    values["attributes"] = "\n".join(f"- {name}: {_show(value)}" for name, value in persona.attributes.items())
    # Assembled from the parsed pieces rather than str.format: check_template has ruled out
    # format specs and conversions, so a placeholder is exactly a name.
    text = "".join(literal + (values[name] if name is not None else "")
                   for literal, name, _, _ in string.Formatter().parse(template))
    return re.sub(r"\n(?:[ \t]*\n){2,}", "\n\n", text).strip()
