"""The installed package is usable from C: a program compiled with `cc`
against vllm_cpp.get_include() and linked to vllm_cpp.get_library_path()
runs and talks to the same libvllm the Python module uses."""

import os
import pathlib
import re
import shutil
import subprocess

import pytest

import vllm_cpp

C_PROGRAM = r"""
#include <stdio.h>
#include <string.h>
#include "vllm.h"

int main(int argc, char** argv) {
    (void)argc;
    if (vllm_abi_version() != VLLM_ABI_VERSION) {
        fprintf(stderr, "header ABI %d, library ABI %d\n", VLLM_ABI_VERSION, (int)vllm_abi_version());
        return 2;
    }
    const char* version = vllm_version();
    if (version == NULL || version[0] == '\0') return 3;
    printf("abi=%d version=%s\n", (int)vllm_abi_version(), version);

    /* A failing load reports MODEL_LOAD, leaves *out NULL, and says why. */
    vllm_model_params params = vllm_model_params_default();
    params.model_path = argv[1];
    vllm_engine* engine = (vllm_engine*)&params; /* must be reset to NULL */
    vllm_status status = vllm_engine_load(&params, &engine);
    const char* err = vllm_last_error();
    printf("load=%d null=%d error=%s\n", (int)status, engine == NULL, err ? err : "(null)");
    if (status != VLLM_ERR_MODEL_LOAD || engine != NULL || err == NULL || strlen(err) == 0) return 4;

    vllm_sampling_params sp = vllm_sampling_params_default();
    if (sp.max_tokens != 16 || sp.repetition_penalty != 1.0f) return 5;
    vllm_engine_free(NULL);      /* no-op */
    vllm_string_free(NULL);      /* no-op */
    vllm_completion_free(NULL);  /* no-op */
    return 0;
}
"""


@pytest.mark.timeout(120)
def test_c_program_links_against_the_shipped_library(tmp_path):
    cc = os.environ.get("CC") or shutil.which("cc") or shutil.which("gcc") or shutil.which("clang")
    if cc is None:
        pytest.skip("no C compiler (cc) on PATH")
    include = vllm_cpp.get_include()
    library = vllm_cpp.get_library_path()
    libdir = os.path.dirname(library)
    src = tmp_path / "abi_client.c"
    src.write_text(C_PROGRAM)
    exe = tmp_path / "abi_client"
    subprocess.run(
        [cc, "-std=c11", "-Wall", "-Werror", "-I", include, str(src), "-o", str(exe),
         "-L", libdir, "-lvllm", "-Wl,-rpath," + libdir],
        check=True, capture_output=True, text=True,
    )
    missing = tmp_path / "no-such-model.gguf"
    proc = subprocess.run([str(exe), str(missing)], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, (proc.returncode, proc.stdout, proc.stderr)
    assert "abi=10 " in proc.stdout
    assert "version=%s" % vllm_cpp.library_version() in proc.stdout
    assert str(missing) in proc.stdout  # the native message names the path


@pytest.mark.timeout(60)
def test_library_exports_exactly_the_c_abi():
    """libvllm's dynamic symbols are the vllm.h entry points, nothing else."""
    nm = shutil.which("nm")
    if nm is None:
        pytest.skip("no nm on PATH")
    out = subprocess.run([nm, "-D", "--defined-only", vllm_cpp.get_library_path()], check=True,
                         capture_output=True, text=True).stdout
    exported = {line.split()[-1] for line in out.splitlines() if line.strip()}
    header = open(os.path.join(vllm_cpp.get_include(), "vllm.h")).read()
    declared = set(re.findall(r"\b(vllm_[a-z_]+)\(", header))
    assert exported == declared


def test_the_engine_configures_alone_inside_the_repository(tmp_path):
    # Issue 38: `cmake -S third_party/vllm.cpp` with no -DVLLM_INCLUDE_DIR
    # finds vllm.h in the package's folder; a copy outside names it.
    from native_build import ENGINE, INCLUDE_DIR, SOURCE_TREE_MISSING, _tool
    if SOURCE_TREE_MISSING is not None:
        pytest.skip(SOURCE_TREE_MISSING)
    cmake = _tool("cmake")
    if cmake is None:
        pytest.skip("cmake is not installed")
    run = subprocess.run([cmake, "-S", str(ENGINE), "-B", str(tmp_path / "alone"), "-DVLLM_BUILD_TESTS=OFF"],
                         capture_output=True, text=True, timeout=110)
    assert run.returncode == 0, run.stdout + run.stderr
    cache = (tmp_path / "alone" / "CMakeCache.txt").read_text(encoding="utf-8")
    assert "VLLM_INCLUDE_DIR:PATH=%s\n" % INCLUDE_DIR.resolve() in cache

    copy = tmp_path / "engine-copy"
    shutil.copytree(ENGINE, copy, ignore=shutil.ignore_patterns("build*", "tests"))
    run = subprocess.run([cmake, "-S", str(copy), "-B", str(tmp_path / "copy-build"), "-DVLLM_BUILD_TESTS=OFF"],
                         capture_output=True, text=True, timeout=110)
    assert run.returncode != 0 and "VLLM_INCLUDE_DIR must name the directory holding vllm.h" in run.stdout + run.stderr


def test_the_installed_package_holds_every_subpackage():
    """Every folder of vllm_cpp/ with an __init__.py is installed: setuptools
    installs only the packages pyproject.toml lists, and an editable install
    (which serves the source tree) would not notice one left out."""
    source = pathlib.Path(__file__).resolve().parents[2] / "vllm_cpp"
    installed = pathlib.Path(vllm_cpp.__file__).parent
    subpackages = sorted(p.parent.name for p in source.glob("*/__init__.py"))
    assert subpackages, "no subpackages found under %s" % source
    missing = [name for name in subpackages if not (installed / name / "__init__.py").is_file()]
    assert not missing, "not installed (add them to pyproject.toml's packages): %s" % missing
