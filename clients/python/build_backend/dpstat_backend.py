"""A PEP 517 build backend for the dpstat client, standard library only.

It builds a pure-Python wheel holding the dpstat package, so installing
needs no build tool from a package index (pip install ./clients/python
works offline). Metadata comes from the [project] table of pyproject.toml.
"""

import base64
import hashlib
import io
import os
import tarfile
import zipfile

try:
    import tomllib
except ImportError:  # Python < 3.11
    tomllib = None

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PACKAGE = "dpstat"


def _project():
    path = os.path.join(ROOT, "pyproject.toml")
    if tomllib is not None:
        with open(path, "rb") as f:
            return tomllib.load(f)["project"]
    # Without tomllib, read the two keys the wheel's name needs.
    project = {}
    with open(path, encoding="utf-8") as f:
        for line in f:
            key, _, value = line.partition("=")
            if key.strip() in ("name", "version", "description", "requires-python") and key.strip() not in project:
                project[key.strip()] = value.strip().strip('"')
    return project


def _metadata(project):
    lines = [
        "Metadata-Version: 2.1",
        f"Name: {project['name']}",
        f"Version: {project['version']}",
        f"Summary: {project.get('description', '')}",
        f"Requires-Python: {project.get('requires-python', '>=3.8')}",
        "Provides-Extra: pandas",
        "Requires-Dist: pandas; extra == \"pandas\"",
    ]
    return "\n".join(lines) + "\n"


def _files():
    """The package's source files, as (path in the archive, bytes)."""
    out = []
    pkg = os.path.join(ROOT, PACKAGE)
    for dirpath, dirnames, filenames in os.walk(pkg):
        dirnames[:] = sorted(d for d in dirnames if d != "__pycache__")
        for name in sorted(filenames):
            if name.endswith(".py") or name == "py.typed":
                full = os.path.join(dirpath, name)
                with open(full, "rb") as f:
                    out.append((os.path.relpath(full, ROOT).replace(os.sep, "/"), f.read()))
    return out


def _record_line(path, data):
    digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
    return f"{path},sha256={digest},{len(data)}"


def get_requires_for_build_wheel(config_settings=None):
    """Nothing beyond the standard library is needed."""
    return []


def get_requires_for_build_sdist(config_settings=None):
    """Nothing beyond the standard library is needed."""
    return []


def build_wheel(wheel_directory, config_settings=None, metadata_directory=None):
    """Write a py3-none-any wheel of the package into wheel_directory."""
    project = _project()
    name, version = project["name"], project["version"]
    dist_info = f"{name}-{version}.dist-info"
    wheel_name = f"{name}-{version}-py3-none-any.whl"
    entries = _files()
    entries.append((f"{dist_info}/METADATA", _metadata(project).encode()))
    entries.append((f"{dist_info}/WHEEL", b"Wheel-Version: 1.0\nGenerator: dpstat_backend\nRoot-Is-Purelib: true\nTag: py3-none-any\n"))
    record = [_record_line(p, d) for p, d in entries] + [f"{dist_info}/RECORD,,"]
    entries.append((f"{dist_info}/RECORD", ("\n".join(record) + "\n").encode()))
    with zipfile.ZipFile(os.path.join(wheel_directory, wheel_name), "w", zipfile.ZIP_DEFLATED) as z:
        for path, data in entries:
            info = zipfile.ZipInfo(path, date_time=(2020, 1, 1, 0, 0, 0))
            info.external_attr = 0o644 << 16
            z.writestr(info, data, zipfile.ZIP_DEFLATED)
    return wheel_name


def build_sdist(sdist_directory, config_settings=None):
    """Write a source archive of the project into sdist_directory."""
    project = _project()
    base = f"{project['name']}-{project['version']}"
    name = base + ".tar.gz"
    files = _files()
    for extra in ("pyproject.toml", "README.md", "build_backend/dpstat_backend.py"):
        path = os.path.join(ROOT, extra)
        if os.path.exists(path):
            with open(path, "rb") as f:
                files.append((extra, f.read()))
    files.append(("PKG-INFO", _metadata(project).encode()))
    with tarfile.open(os.path.join(sdist_directory, name), "w:gz") as tar:
        for path, data in files:
            info = tarfile.TarInfo(f"{base}/{path}")
            info.size = len(data)
            info.mtime = 1577836800
            tar.addfile(info, io.BytesIO(data))
    return name
