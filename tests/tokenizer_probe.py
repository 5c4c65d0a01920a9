"""Runs the engine's tokenizer probe (third_party/vllm.cpp/tests/tokenizer_probe.cpp)
for the tokenizer tests: texts in, token ids and the bytes of those ids out."""

import subprocess

from native_build import build_native_tests


class ProbeError(Exception):
    """The probe refused to load the vocabulary; the message is the engine's."""


def probe_path():
    return build_native_tests() / "tokenizer_probe"


def tokenize(probe, load_args, texts, add_special=False, parse_special=True):
    """[(ids, bytes of the ids with special tokens rendered)] for each text."""
    flags = (["--add-special"] if add_special else []) + ([] if parse_special else ["--no-parse-special"])
    stdin = "".join(t.encode("utf-8").hex() + "\n" for t in texts)
    result = subprocess.run([str(probe), *flags, *map(str, load_args)], input=stdin, capture_output=True,
                            text=True, timeout=600)
    if result.returncode != 0:
        raise ProbeError(result.stderr.strip())
    out = []
    for line in result.stdout.splitlines():
        ids, hex_bytes = line.split("\t")
        out.append(([int(i) for i in ids.split()], bytes.fromhex(hex_bytes)))
    assert len(out) == len(texts), result.stdout[-2000:]
    return out
