"""YAML as users write it, read without silent choices: a key given twice in one mapping is an error.

PyYAML's safe_load keeps the last of two equal keys without a word, so a scenario with `serving:` twice (or
`tp: 2` and, further down the same block, `tp: 4`) ran with whichever came last. The error is a yaml.YAMLError,
reported like any other YAML mistake, with the key and both lines.
"""

from __future__ import annotations

import re
from typing import Any

import yaml


class _NoDuplicateKeysLoader(yaml.SafeLoader):
    def construct_mapping(self, node: yaml.MappingNode, deep: bool = False) -> dict[Any, Any]:
        seen: dict[Any, yaml.Node] = {}
        for key_node, _ in node.value:
            if key_node.tag == "tag:yaml.org,2002:merge":
                continue  # `<<: *anchor` merges keys that the mapping's own keys may override, as YAML allows
            key = self.construct_object(key_node, deep=True)
            try:
                first = seen.get(key)
            except TypeError:  # an unhashable key: SafeLoader's own error says so
                break
            if first is not None:
                raise yaml.constructor.ConstructorError(
                    f"key {key!r} is given twice in one mapping (first on line {first.start_mark.line + 1}); "
                    "give it once",
                    key_node.start_mark,
                )
            seen[key] = key_node
        mapping = YamlMapping(super().construct_mapping(node, deep=deep))
        mapping.bool_words = _yaml11_bool_words(self, node)
        return mapping

    def construct_yaml_map(self, node: yaml.MappingNode) -> Any:
        # SafeConstructor's own yields a plain dict first (for anchors that refer to it) and fills it in
        data = YamlMapping()
        yield data
        value = self.construct_mapping(node)
        data.update(value)
        data.bool_words = value.bool_words

    def construct_yaml_int(self, node: yaml.ScalarNode) -> int:
        value = super().construct_yaml_int(node)
        _refuse_yaml11_number(node, value)
        return value

    def construct_yaml_float(self, node: yaml.ScalarNode) -> float:
        value = super().construct_yaml_float(node)
        _refuse_yaml11_number(node, value)
        return value


class YamlMapping(dict):  # type: ignore[type-arg]
    """A mapping as the YAML file gave it, with the words YAML 1.1 made true or false (`name: no` is False): a field
    that takes text reads `bool_words` to say which word the user wrote (scenario/models.YamlBool)."""

    bool_words: dict[Any, str] = {}  # noqa: RUF012 - replaced per mapping, never changed in place


# YAML 1.1's true/false words that YAML 1.2 and users read as text: PyYAML's bool resolver (true/false aside)
_YAML11_BOOL_WORDS = frozenset({"yes", "no", "on", "off"})


def _yaml11_bool_words(loader: yaml.SafeLoader, node: yaml.MappingNode) -> dict[Any, str]:
    """{key: the word} for the values of `node` that are an unquoted yes, no, on or off (any case)."""
    words: dict[Any, str] = {}
    for key_node, value_node in node.value:
        if (
            isinstance(value_node, yaml.ScalarNode)
            and value_node.tag == "tag:yaml.org,2002:bool"
            and str(value_node.value).lower() in _YAML11_BOOL_WORDS
            and isinstance(key_node, yaml.ScalarNode)
        ):
            words[loader.construct_object(key_node)] = str(value_node.value)
    return words


# safe_dump writes a loaded mapping back as the plain mapping it is (plan save, --save-scenario)
yaml.SafeDumper.add_representer(YamlMapping, yaml.representer.SafeRepresenter.represent_dict)

# YAML 1.1 (PyYAML) reads `1:30` as 90 (base 60) and `010` as 8 (octal), where YAML 1.2 and every user read 1:30 as
# text and 010 as ten: a rate or count written so came out another number without a word. Both are refused.
_SEXAGESIMAL = re.compile(r"^[-+]?[0-9][0-9_]*(?::[0-5]?[0-9])+(?:\.[0-9_]*)?$")
_LEADING_ZERO = re.compile(r"^[-+]?0[0-7_]+$")


def _refuse_yaml11_number(node: yaml.ScalarNode, value: float) -> None:
    text = str(node.value)
    if _SEXAGESIMAL.match(text):
        why = f"YAML 1.1 reads it as a base-60 number ({value:g}); write the number you mean"
    elif _LEADING_ZERO.match(text):
        why = f"YAML 1.1 reads a leading 0 as octal ({value:g}); write it without the leading 0"
    else:
        return
    raise yaml.constructor.ConstructorError(
        None, None, f"{text!r}: {why}, or quote it for text", node.start_mark
    )


_NoDuplicateKeysLoader.add_constructor("tag:yaml.org,2002:map", _NoDuplicateKeysLoader.construct_yaml_map)
_NoDuplicateKeysLoader.add_constructor("tag:yaml.org,2002:int", _NoDuplicateKeysLoader.construct_yaml_int)
_NoDuplicateKeysLoader.add_constructor("tag:yaml.org,2002:float", _NoDuplicateKeysLoader.construct_yaml_float)

# YAML 1.2 reads 1e3 and 2.5e-3 as numbers; PyYAML (YAML 1.1) wants a dot and a signed exponent (1.0e+3) and read
# them as text, which a number field then refused, or took as a quoted number (scenario/models.Quoted)
_NoDuplicateKeysLoader.add_implicit_resolver(
    "tag:yaml.org,2002:float",
    re.compile(r"^[-+]?(?:[0-9][0-9_]*(?:\.[0-9_]*)?|\.[0-9][0-9_]*)[eE][-+]?[0-9]+$"),
    list("-+0123456789."),
)


def error_line(err: yaml.YAMLError) -> str:
    """A YAML error on one line: PyYAML's report spans several (the problem, the line, a caret), and simperf's
    errors are one line each."""
    return " ".join(str(err).split())


def read_error(err: OSError | UnicodeDecodeError) -> str:
    """Why a YAML file could not be read, for a message that names the file: the OS's reason ('Is a directory', not
    Python's message repeating the path), or the codec's for a file that is not UTF-8."""
    return getattr(err, "strerror", None) or str(err)


def safe_load(text: str) -> Any:
    """yaml.safe_load that refuses a mapping key given twice (a yaml.YAMLError naming the key and its lines)."""
    return yaml.load(text, Loader=_NoDuplicateKeysLoader)  # noqa: S506 - a SafeLoader subclass
