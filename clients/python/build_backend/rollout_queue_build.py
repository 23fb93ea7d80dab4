"""PEP 517 / PEP 660 build backend of the rollout-queue Python client, standard library only.

Why not setuptools: `pip install ./clients/python` must work offline in a fresh venv. With build
isolation pip installs the backend's requirements from an index first; setuptools before 70.1
(Debian bookworm ships 66) also needs the `wheel` package to build any wheel, and neither
Debian's python3-venv nor CPython's ensurepip put `wheel` in a new venv (3.12+ not even
setuptools). This backend needs nothing (`requires = []`), so the build never reaches an index.

What it builds is the one pure-Python package under src/: a `py3-none-any` wheel (PEP 427) of
src/rollout_queue with its py.typed marker, an editable wheel (PEP 660: one .pth naming src/),
and an sdist (PEP 517) of this directory. Metadata is the [project] table of pyproject.toml
(name, version, description, requires-python, license: flat strings only).
"""

import base64
import hashlib
import io
import os
import re
import tarfile
import zipfile

__all__ = [
    "build_wheel",
    "build_sdist",
    "build_editable",
    "get_requires_for_build_wheel",
    "get_requires_for_build_sdist",
    "get_requires_for_build_editable",
    "prepare_metadata_for_build_wheel",
    "prepare_metadata_for_build_editable",
    "read_project",
]

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PACKAGE = "rollout_queue"
#: Fixed member times (the zip epoch), so two builds of the same sources are the same bytes.
ZIP_TIME = (1980, 1, 1, 0, 0, 0)
#: The [project] keys this backend reads; every one is a flat TOML string.
PROJECT_KEYS = ("name", "version", "description", "requires-python", "license")


def read_project(path=None):
    """The [project] table of pyproject.toml as {key: str}, for PROJECT_KEYS.

    Python 3.11+ reads it with tomllib. 3.9 and 3.10 have no TOML reader in the standard
    library: there the table's lines of the form `key = "string"` are read (the only form this
    file uses; the test suite checks both readers agree on it).
    Raises ValueError naming the key when name or version is missing.
    """
    path = path or os.path.join(ROOT, "pyproject.toml")
    with open(path, "rb") as handle:
        data = handle.read()
    try:
        import tomllib  # Python 3.11+
    except ImportError:
        project = _read_flat_project(data.decode("utf-8"))
    else:
        project = tomllib.loads(data.decode("utf-8")).get("project", {})
    values = {key: project[key] for key in PROJECT_KEYS if isinstance(project.get(key), str)}
    for key in ("name", "version"):
        if key not in values:
            raise ValueError("%s: [project] needs %s = \"...\"" % (path, key))
    return values


def _read_flat_project(text):
    """`key = "string"` lines of the [project] table (basic strings, \\" and \\\\ escapes)."""
    values = {}
    table = None
    for raw in text.splitlines():
        line = raw.strip()
        if line.startswith("["):
            table = line.strip("[]").strip()
            continue
        match = re.match(r'^([A-Za-z0-9_-]+)\s*=\s*"((?:[^"\\]|\\.)*)"\s*(#.*)?$', line)
        if table == "project" and match:
            values[match.group(1)] = match.group(2).replace('\\"', '"').replace("\\\\", "\\")
    return values


def _dist_name(project):
    """The distribution name as wheel file names spell it (PEP 427: runs of -_. become _)."""
    return re.sub(r"[-_.]+", "_", project["name"]).lower()


def _metadata(project):
    """METADATA / PKG-INFO text (core metadata 2.1)."""
    lines = ["Metadata-Version: 2.1", "Name: %s" % project["name"], "Version: %s" % project["version"]]
    if "description" in project:
        lines.append("Summary: %s" % project["description"])
    if "requires-python" in project:
        lines.append("Requires-Python: %s" % project["requires-python"])
    if "license" in project:
        lines.append("License: %s" % project["license"])
    return "\n".join(lines) + "\n"


def _wheel_text():
    return "Wheel-Version: 1.0\nGenerator: rollout_queue_build\nRoot-Is-Purelib: true\nTag: py3-none-any\n"


def _package_files():
    """(path inside the wheel, bytes) of every file of src/rollout_queue, sorted; caches left out."""
    source = os.path.join(ROOT, "src", PACKAGE)
    files = []
    for directory, dirs, names in os.walk(source):
        dirs[:] = sorted(d for d in dirs if d != "__pycache__")
        for name in sorted(names):
            if name.endswith((".pyc", ".pyo")):
                continue
            full = os.path.join(directory, name)
            relative = os.path.relpath(full, os.path.join(ROOT, "src")).replace(os.sep, "/")
            with open(full, "rb") as handle:
                files.append((relative, handle.read()))
    return files


def _record_line(path, content):
    digest = base64.urlsafe_b64encode(hashlib.sha256(content).digest()).rstrip(b"=").decode("ascii")
    return "%s,sha256=%s,%d" % (path, digest, len(content))


def _dist_info_files(project):
    dist_info = "%s-%s.dist-info" % (_dist_name(project), project["version"])
    return dist_info, [
        (dist_info + "/METADATA", _metadata(project).encode("utf-8")),
        (dist_info + "/WHEEL", _wheel_text().encode("utf-8")),
        (dist_info + "/top_level.txt", (PACKAGE + "\n").encode("utf-8")),
    ]


def _write_wheel(wheel_directory, members):
    """Writes `members` ((path, bytes), ...) and their RECORD as this project's wheel; returns its file name."""
    project = read_project()
    dist_info, info_files = _dist_info_files(project)
    members = list(members) + info_files
    record_path = dist_info + "/RECORD"
    record = "\n".join([_record_line(path, content) for path, content in members] + [record_path + ",,"]) + "\n"
    name = "%s-%s-py3-none-any.whl" % (_dist_name(project), project["version"])
    with zipfile.ZipFile(os.path.join(wheel_directory, name), "w", zipfile.ZIP_DEFLATED) as wheel:
        for path, content in members + [(record_path, record.encode("utf-8"))]:
            info = zipfile.ZipInfo(path, ZIP_TIME)
            info.external_attr = 0o644 << 16
            info.compress_type = zipfile.ZIP_DEFLATED
            wheel.writestr(info, content)
    return name


def _write_metadata_dir(metadata_directory):
    dist_info, info_files = _dist_info_files(read_project())
    for path, content in info_files:
        target = os.path.join(metadata_directory, path)
        os.makedirs(os.path.dirname(target), exist_ok=True)
        with open(target, "wb") as handle:
            handle.write(content)
    return dist_info


# ── PEP 517 hooks ─────────────────────────────────────────────────────────────


def get_requires_for_build_wheel(config_settings=None):
    return []


def get_requires_for_build_sdist(config_settings=None):
    return []


def get_requires_for_build_editable(config_settings=None):
    return []


def prepare_metadata_for_build_wheel(metadata_directory, config_settings=None):
    return _write_metadata_dir(metadata_directory)


def prepare_metadata_for_build_editable(metadata_directory, config_settings=None):
    return _write_metadata_dir(metadata_directory)


def build_wheel(wheel_directory, config_settings=None, metadata_directory=None):
    """The wheel of src/rollout_queue (py.typed included)."""
    return _write_wheel(wheel_directory, _package_files())


def build_editable(wheel_directory, config_settings=None, metadata_directory=None):
    """An editable wheel (PEP 660): a .pth file that puts this checkout's src/ on sys.path."""
    pth = (os.path.join(ROOT, "src") + "\n").encode("utf-8")
    return _write_wheel(wheel_directory, [("__editable__.%s.pth" % PACKAGE, pth)])


def build_sdist(sdist_directory, config_settings=None):
    """rollout_queue-<version>.tar.gz: pyproject.toml, build_backend/, src/, tests/ and PKG-INFO."""
    project = read_project()
    base = "%s-%s" % (_dist_name(project), project["version"])
    name = base + ".tar.gz"
    with tarfile.open(os.path.join(sdist_directory, name), "w:gz", format=tarfile.PAX_FORMAT) as sdist:
        for top in ("pyproject.toml", "build_backend", "src", "tests"):
            path = os.path.join(ROOT, top)
            if os.path.exists(path):
                sdist.add(path, arcname=base + "/" + top, filter=_sdist_filter)
        info = tarfile.TarInfo(base + "/PKG-INFO")
        content = _metadata(project).encode("utf-8")
        info.size = len(content)
        info.mode = 0o644
        sdist.addfile(info, io.BytesIO(content))
    return name


def _sdist_filter(info):
    if "__pycache__" in info.name or info.name.endswith((".pyc", ".pyo")):
        return None
    info.uid = info.gid = 0
    info.uname = info.gname = ""
    info.mtime = 0
    return info
