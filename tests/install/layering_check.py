#!/usr/bin/env python3
"""Checks the layering rule of CMakeLists.txt: a plugin (connector, sink, checkpoint backend,
snapshot driver, codec, ...) sees the public headers, the core's internal headers and its own
directory, never a sibling's files.

Usage: layering_check.py SOURCE_DIR BUILD_DIR

Two checks, both over what the build really does (BUILD_DIR/compile_commands.json):
  1. The compiler refuses a sibling: for every library target made from one directory under
     src/ (all but the server), a probe that includes one header of every other directory
     under src/ is compiled with that target's own compile command; each must fail with "No
     such file" (a source file stands in where a directory has no header). A probe with the
     headers the target may include (cppcdc/, core/, its own) must compile, so the first check
     cannot pass for a wrong reason.
  2. No way around it in the sources: no #include in a plugin's directory climbs out with
     "..", and none names another directory under src/ than core/ and its own.
  3. The server names no plugin: outside src/server/builtin_plugins.cpp (the one list of
     built-in plugins), no file of src/server includes a connector's header or a plugin's
     private one, or names a connector's namespace or a built-in sink or checkpoint backend;
     it reaches them through the registry (cppcdc/plugin.hpp).
  4. Sinks name no codec: no file of src/sink includes a codec's own public header
     (cppcdc/avro.hpp, ...) or calls a codec's factory other than the JSON default's; they
     take their encoder from the codec registry (configure_codec).
Exits 1 with one line per breach.
"""

import json
import os
import re
import shlex
import subprocess
import sys
import tempfile

INCLUDE_RE = re.compile(r'^\s*#\s*include\s*([<"])([^>"]+)[>"]')


def headers_of(src_root, module_dir):
    """Headers in a module's own directory (not its subdirectories), sorted."""
    path = os.path.join(src_root, module_dir)
    return sorted(f for f in os.listdir(path) if f.endswith(".hpp"))


def any_file_of(src_root, module_dir):
    """A header of the module's directory or, when it has none, a source file."""
    path = os.path.join(src_root, module_dir)
    files = sorted(f for f in os.listdir(path) if f.endswith((".hpp", ".cpp")))
    return sorted(files, key=lambda f: not f.endswith(".hpp"))[0]


def module_dirs(src_root):
    """Every directory under src/ that holds source files, relative to src/."""
    found = set()
    for dirpath, _, files in os.walk(src_root):
        if any(f.endswith((".cpp", ".hpp")) for f in files):
            found.add(os.path.relpath(dirpath, src_root))
    return found


def targets_from_compile_commands(build_dir, src_root):
    """{target: (module dir under src/, one compile command as argv)} for the library targets
    made from a single directory under src/ (the server sees all of src/ and is skipped)."""
    with open(os.path.join(build_dir, "compile_commands.json")) as f:
        entries = json.load(f)
    sources = {}
    commands = {}
    for e in entries:
        file = os.path.realpath(os.path.join(e["directory"], e["file"]))
        if not file.startswith(src_root + os.sep):
            continue
        m = re.search(r"CMakeFiles/([^/]+)\.dir/", e.get("output", "") or e["command"])
        if not m:
            continue
        target = m.group(1)
        sources.setdefault(target, []).append(os.path.relpath(os.path.dirname(file), src_root))
        argv = e["arguments"] if "arguments" in e else shlex.split(e["command"])
        commands.setdefault(target, (e["directory"], argv))
    result = {}
    for target, dirs in sources.items():
        top = os.path.commonpath(dirs)
        if top.split(os.sep)[0] == "server":
            continue
        result[target] = (top, commands[target])
    return result


def probe_command(argv, probe):
    """The target's compile command, turned into a syntax-only compile of `probe`."""
    out = []
    skip = 0
    for i, a in enumerate(argv):
        if skip:
            skip -= 1
            continue
        if i == 0 and os.path.basename(a) == "ccache":
            continue
        if a in ("-o", "-MT", "-MF", "-c"):
            skip = 1
            continue
        if a in ("-MD", "-MMD"):
            continue
        out.append(a)
    return out + ["-fsyntax-only", "-x", "c++", probe]


def compile_probe(directory, argv, includes, tmp):
    probe = os.path.join(tmp, "probe.cpp")
    with open(probe, "w") as f:
        for inc in includes:
            f.write('#include "%s"\n' % inc)
    env = dict(os.environ, LC_ALL="C")
    run = subprocess.run(probe_command(argv, probe), cwd=directory, capture_output=True,
                         text=True, env=env)
    return run.returncode, run.stdout + run.stderr


def check_sources(src_root, module, tops):
    """Include lines of a module that leave its own directory other than to core/."""
    bad = []
    own = module + "/"
    base = os.path.join(src_root, module)
    for dirpath, _, files in os.walk(base):
        for name in sorted(files):
            if not name.endswith((".cpp", ".hpp", ".h", ".inc")):
                continue
            path = os.path.join(dirpath, name)
            with open(path, errors="replace") as f:
                for lineno, line in enumerate(f, 1):
                    m = INCLUDE_RE.match(line)
                    if not m:
                        continue
                    inc = m.group(2)
                    close = ">" if m.group(1) == "<" else '"'
                    where = "%s:%d: #include %s%s%s" % (os.path.relpath(path, src_root), lineno,
                                                        m.group(1), inc, close)
                    if ".." in inc.split("/"):
                        bad.append(where + ' climbs out with ".."')
                    elif inc.split("/")[0] in tops and not (
                            inc.startswith("core/") or inc.startswith(own)):
                        bad.append(where + " names a sibling under src/")
    return bad


# What src/server may not name outside its list of built-in plugins (check 3).
SERVER_PLUGIN_LIST = "builtin_plugins.cpp"
SERVER_FORBIDDEN_INCLUDE_RE = re.compile(
    r'^(cppcdc/(postgres|mysql|sqlserver|http_sink|avro|debezium|json_schema|protobuf)(\.hpp|/)|'
    r'(source|sink|checkpoint|codec)/)')
SERVER_FORBIDDEN_NAME_RE = re.compile(
    r'\b(pg|mysql|sqlserver)::|\b(FileCheckpoint|InMemoryCheckpoint|make_file_sink|'
    r'make_stdout_sink|make_http_sink|PostgresSourceConfig|make_avro_encoder|'
    r'make_debezium_json_encoder|make_json_schema_encoder)\b')

# What a sink may not name (check 4): a codec other than the JSON default. Sinks get their
# encoder from the codec registry (configure_codec), so a new codec needs no sink change.
SINK_FORBIDDEN_INCLUDE_RE = re.compile(r'^cppcdc/(avro|debezium|json_schema|protobuf)\.hpp$')
SINK_FORBIDDEN_NAME_RE = re.compile(r'\bmake_(?!json_(en|de)coder\b)\w+_(encoder|decoder)\b')


def check_sinks(src_root):
    """Lines of src/sink that name a codec other than the JSON default."""
    bad = []
    for dirpath, _, files in os.walk(os.path.join(src_root, "sink")):
        for name in sorted(files):
            if not name.endswith((".cpp", ".hpp")):
                continue
            path = os.path.join(dirpath, name)
            with open(path, errors="replace") as f:
                for lineno, line in enumerate(f, 1):
                    code = line.split("//", 1)[0]
                    where = "%s:%d" % (os.path.relpath(path, src_root), lineno)
                    m = INCLUDE_RE.match(code)
                    if m and SINK_FORBIDDEN_INCLUDE_RE.match(m.group(2)):
                        bad.append(where + ": includes " + m.group(2) +
                                   " (sinks reach codecs through the codec registry)")
                    elif not m and SINK_FORBIDDEN_NAME_RE.search(code):
                        bad.append(where + ": names a codec: " + line.strip())
    return bad


def check_server(src_root):
    """Lines of src/server outside its plugin list that name a plugin."""
    bad = []
    base = os.path.join(src_root, "server")
    for dirpath, _, files in os.walk(base):
        for name in sorted(files):
            if name == SERVER_PLUGIN_LIST or not name.endswith((".cpp", ".hpp")):
                continue
            path = os.path.join(dirpath, name)
            with open(path, errors="replace") as f:
                for lineno, line in enumerate(f, 1):
                    code = line.split("//", 1)[0]
                    where = "%s:%d" % (os.path.relpath(path, src_root), lineno)
                    m = INCLUDE_RE.match(code)
                    if m and SERVER_FORBIDDEN_INCLUDE_RE.match(m.group(2)):
                        bad.append(where + ": includes " + m.group(2) +
                                   " (the server reaches plugins through the registry)")
                    elif not m and SERVER_FORBIDDEN_NAME_RE.search(code):
                        bad.append(where + ": names a plugin: " + line.strip())
    return bad


def main():
    if len(sys.argv) != 3:
        print(__doc__)
        return 2
    src_root = os.path.realpath(os.path.join(sys.argv[1], "src"))
    build_dir = sys.argv[2]
    tops = {d for d in os.listdir(src_root) if os.path.isdir(os.path.join(src_root, d))}
    dirs = module_dirs(src_root)
    targets = targets_from_compile_commands(build_dir, src_root)
    failures = []
    if "core" not in [m for m, _ in targets.values()]:
        failures.append("no target built from src/core found in compile_commands.json")

    with tempfile.TemporaryDirectory() as tmp:
        for target, (module, (directory, argv)) in sorted(targets.items()):
            # Allowed: a public header, a core header, one of its own.
            allowed = ["cppcdc/result.hpp", "core/" + headers_of(src_root, "core")[0]]
            own = headers_of(src_root, module)
            if own and module != "core":
                allowed.append(module + "/" + own[0])
            rc, out = compile_probe(directory, argv, allowed, tmp)
            if rc != 0:
                failures.append("%s: may include %s, yet the probe does not compile:\n%s" %
                                (target, ", ".join(allowed), out))
                continue
            # Refused: one file of every other directory under src/.
            siblings = 0
            for other in sorted(dirs):
                if other == module or other == "core" or other.startswith(module + "/") or (
                        module != "core" and module.startswith(other + "/")):
                    continue
                inc = other + "/" + any_file_of(src_root, other)
                rc, out = compile_probe(directory, argv, [inc], tmp)
                siblings += 1
                if rc == 0:
                    failures.append("%s (src/%s) can include %s" % (target, module, inc))
                elif "No such file" not in out:
                    failures.append("%s: including %s fails, but not for want of the file:\n%s"
                                    % (target, inc, out))
            print("%-24s src/%-18s compiles with %s; refused %d sibling(s)" %
                  (target, module, ", ".join(allowed), siblings))
            failures += check_sources(src_root, module, tops)

    failures += check_server(src_root)
    failures += check_sinks(src_root)

    for f in failures:
        print("LAYERING: " + f)
    if failures:
        return 1
    print("layering ok: %d targets" % len(targets))
    return 0


if __name__ == "__main__":
    sys.exit(main())
