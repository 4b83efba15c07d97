"""The ptxas-only route of the compile-step cache (issue 38): a CUDA compile whose flags differ only for ptxas
from a compile of the same object seen before runs ptxas and fatbinary and nothing else.

nvcc compiles a .cu file in steps (`nvcc -dryrun` lists them): the host preprocessor and cudafe++, the front end
(cicc: PTX), ptxas (PTX -> cubin), fatbinary (the cubins -> one fatbin) and the host compile, which embeds the
fatbin in the object's `.nv_fatbin` section and nothing else of it (its code only refers to the section's
start). So the object of a compile that differs from an earlier one only in its ptxas and fatbinary steps is the
earlier object with that section replaced by the new fatbin. sccache (the rest of the step cache) serves such a
compile the front end's PTX but runs the host compile again, whose input (the embedded fatbin) changed.

Run by the step cache's launcher script for each CUDA compile that does not make LTO IR, as
``python -I -S ptxas_route.py <sccache> <nvcc> <args>...``; the standard library only (it starts per compile).
Every compile it sees is remembered in ``$SCCACHE_DIR/ptxas-route/<key>/`` (shared by the build's variant trees:
a trial goes to whichever tree is free): the PTX nvcc kept (``--keep``, into ``<object>.ciq/keep`` in the tree),
the host object, the dependency file (a compile without one is not routed) and the SHA-256 of every file it
names. The key hashes the compile's steps other than ptxas and fatbinary (`nvcc -dryrun`), the route's keep
folder written as KEEP_MARK: the same file compiled alike in another tree has the same key; a compile whose steps
name its tree otherwise (generated headers, a -D of a path) or that writes host debug information (which holds
the working folder) has one of its own. An entry serves a compile whose steps are its own word for word (front
end and host options, source, compiler and version) and none of whose dependency files changed: it runs the
compile's ptxas and fatbinary steps as nvcc would on the entry's PTX, writes the dependency file and the object
(the entry's host object with the new fatbin as ``.nv_fatbin``, `objcopy --update-section`). The fatbin made of
the entry's PTX is remembered per ptxas and fatbinary steps (keep folder marked; at most MAX_DEVICE_CODES per
entry): a compile whose steps were all seen before (another tree's first build with the same flags, a finalist
built again) runs no ptxas at all. Anything else (another front end, relocatable device code, an error of the
route's own) goes through sccache (with ``--keep``) and is remembered. At most MAX_ENTRIES entries and MAX_BYTES
bytes, the least recently used out first. Each decision is appended to ``$SCCACHE_DIR/ptxas-route.log`` ("hit",
"hit device code remembered" or "miss <why>"): the step cache's counts.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

MEMO_SUFFIX = ".ciq"
MEMO_FOLDER = "ptxas-route"  # under $SCCACHE_DIR
MAX_ENTRIES = 2048  # compiles remembered (one per object and front end)
MAX_BYTES = 4 * 2**30  # their PTX and host objects, beside sccache's own cache (step_cache.CACHE_SIZE)
MAX_DEVICE_CODES = 16  # fatbins remembered per entry (one per ptxas and fatbinary steps seen)
HIT, HIT_REMEMBERED = "hit", "hit device code remembered"  # the log's words for a compile served
TREE_MARK = "<compileiq-tree>"
KEEP_MARK = "<compileiq-keep>"
LOG_NAME = "ptxas-route.log"
_ROUTED_STEPS = ("ptxas ", "fatbinary ")
# device code that is linked later (relocatable, LTO IR) or a compile that is not one object of one source
_NOT_ROUTED = {
    *("-rdc=true", "--relocatable-device-code=true", "-dc", "--device-c", "-dw", "--device-w", "-dlink"),
    *("--device-link", "-lib", "--lib", "-E", "--preprocess", "-M", "--generate-dependencies", "-ptx", "--ptx"),
    *("-cubin", "--cubin", "-fatbin", "--fatbin", "-dlto", "--dlink-time-opt", "-keep", "--keep", "-keep-dir"),
    *("--keep-dir", "-save-temps", "--save-temps", "-dryrun", "--dryrun"),
}


def _value(args: list[str], *names: str) -> str | None:
    """The value of the last of these options (`-o x`, `-o=x`, `--output-file x`)."""
    found = None
    for i, arg in enumerate(args):
        for name in names:
            if arg == name and i + 1 < len(args):
                found = args[i + 1]
            elif arg.startswith(name + "="):
                found = arg[len(name) + 1 :]
    return found


def routable(args: list[str]) -> bool:
    """Whether a compile can take the route: nvcc compiling one object (-c, -o) of device code that is not
    linked later, writing a dependency file (-MF: what the object was made of, checked before it is served)."""
    if not args or not Path(args[0]).name.startswith("nvcc"):
        return False
    words = set(args[1:])
    if not ({"-c", "--compile"} & words) or _value(args, "-o", "--output-file") is None:
        return False
    if _value(args, "-MF", "--dependency-output") is None:  # its files could not be checked later
        return False
    if words & _NOT_ROUTED or any(w.split("=", 1)[0] in _NOT_ROUTED for w in words if w.startswith("-")):
        return False
    return not any("lto_" in w or w in ("-rdc", "--relocatable-device-code") for w in words)


def dryrun(args: list[str]) -> list[str] | None:
    """The steps nvcc would run for this command (its -dryrun lines, without their '#$ '), None if it fails."""
    try:
        proc = subprocess.run([args[0], "-dryrun", *args[1:]], capture_output=True, text=True, timeout=120)
    except (OSError, ValueError, subprocess.TimeoutExpired):  # (ValueError: output not text)
        return None
    if proc.returncode != 0:
        return None
    return [line[3:] for line in (proc.stderr + proc.stdout).splitlines() if line.startswith("#$ ")]


def split_steps(lines: list[str]) -> tuple[list[str], list[str]]:
    """(every step but ptxas and fatbinary: what must be the memo's; ptxas and fatbinary, in nvcc's order)."""
    routed = [line for line in lines if line.startswith(_ROUTED_STEPS)]
    return [line for line in lines if not line.startswith(_ROUTED_STEPS)], routed


def depfile_paths(text: str) -> list[str]:
    """The prerequisites of a Make-style dependency file (`obj: a.cu b.h \\` lines; `\\ ` is a space)."""
    body = text.replace("\\\n", " ").replace("\\\r\n", " ")
    paths: list[str] = []
    for rule in body.splitlines():
        if ":" in rule:
            rest = rule.split(": ", 1)[1] if ": " in rule else rule.split(":", 1)[1]
            paths += [word.replace("\\ ", " ") for word in re.findall(r"(?:\\ |\S)+", rest)]
    return paths


def _digest(path: Path) -> str:
    try:
        return hashlib.sha256(path.read_bytes()).hexdigest()
    except OSError:
        return ""


def _digests(paths: list[str], cwd: Path) -> dict[str, str]:
    return {p: _digest(cwd / p) for p in paths}


def _log(word: str) -> None:
    folder = os.environ.get("SCCACHE_DIR")
    if not folder:
        return
    try:
        with open(Path(folder) / LOG_NAME, "a") as f:
            f.write(" ".join(word.split()) + "\n")  # one line per decision (an error's text may hold several)
    except OSError:
        pass


def _tool_path(lines: list[str]) -> str:
    """PATH for the routed steps: the folders nvcc puts first (its -dryrun's PATH= line), then ours."""
    for line in lines:
        if line.startswith("PATH="):
            return line[len("PATH=") :]
    return os.environ.get("PATH", "")


def tree_root(start: Path) -> Path:
    """The build tree a compile runs in: the nearest folder up from its working folder with CMakeCache.txt."""
    for folder in (start, *start.parents):
        if (folder / "CMakeCache.txt").is_file():
            return folder
    return start


class Memo:
    """Where one compile is remembered: `keep` (nvcc's --keep-dir for this object, in its tree), `root` (the
    shared entries), `tree` and `cwd` (the compile's build tree and working folder)."""

    def __init__(self, obj: Path, tree: Path, cwd: Path) -> None:
        self.keep = obj.with_name(obj.name + MEMO_SUFFIX) / "keep"
        folder = os.environ.get("SCCACHE_DIR")
        self.root = Path(folder) / MEMO_FOLDER if folder else obj.with_name(obj.name + MEMO_SUFFIX + "-memo")
        self.tree = str(tree)
        self.cwd = str(cwd)

    def shared_steps(self, steps: list[str]) -> list[str]:
        """The steps as remembered: the keep folder (the route's own, the only path of the tree that differs
        between trees by construction) written as KEEP_MARK; any other path of the tree stays, so a compile
        that names its tree (an include folder of generated headers, a -D of a path) is remembered for that
        tree only. With host debug information (a -g option in a step) the object holds its working folder:
        remembered for that folder only."""
        marked = self._marked(steps)
        if any(word.startswith("-g") for line in steps for word in line.split()):
            marked.append(f"cwd={self.cwd}")
        return marked

    def _marked(self, lines: list[str]) -> list[str]:
        """Steps with the route's own keep folder written as KEEP_MARK."""
        return [line.replace(str(self.keep), KEEP_MARK) for line in lines]

    def shared(self, text: str) -> str:
        """A dependency file's text and paths as remembered (its tree written as TREE_MARK)."""
        return text.replace(self.tree, TREE_MARK)

    def local(self, text: str) -> str:
        return text.replace(TREE_MARK, self.tree)

    def entry(self, steps: list[str]) -> Path:
        return self.root / hashlib.sha256("\n".join(self.shared_steps(steps)).encode()).hexdigest()[:24]

    def device_code(self, entry: Path, doc: dict, routed: list[str]) -> Path:
        """Where the entry keeps the fatbin that these ptxas and fatbinary steps made of its PTX (named with the
        entry's nonce: a file written for an entry replaced since is never read as the new one's)."""
        marked = "\n".join(self._marked(routed))
        return entry / f"fatbin-{doc.get('nonce', '')}-{hashlib.sha256(marked.encode()).hexdigest()[:16]}"

    def keep_device_code(self, entry: Path, doc: dict, routed: list[str], fatbin: Path) -> None:
        """Remember the fatbin these steps made (written whole, then renamed), at most MAX_DEVICE_CODES per
        entry (the least recently used out; a file of an entry replaced since, another nonce, out at once)."""
        target = self.device_code(entry, doc, routed)
        temp = entry / f".{target.name}.{os.getpid()}"
        try:
            shutil.copyfile(fatbin, temp)
            os.replace(temp, target)
        finally:
            temp.unlink(missing_ok=True)
        mine = f"fatbin-{doc.get('nonce', '')}-"
        codes = []
        for code in entry.glob("fatbin-*"):
            if not code.name.startswith(mine):
                code.unlink(missing_ok=True)
            else:
                codes.append((code.stat().st_mtime_ns, code))
        for _, old in sorted(codes, reverse=True)[MAX_DEVICE_CODES:]:
            old.unlink(missing_ok=True)

    def read(self, entry: Path) -> dict | None:
        try:
            doc = json.loads((entry / "state.json").read_text())
        except (OSError, ValueError):
            return None
        return doc if isinstance(doc, dict) and (entry / "host.o").is_file() else None

    def fresh_keep(self) -> None:
        shutil.rmtree(self.keep, ignore_errors=True)
        self.keep.mkdir(parents=True, exist_ok=True)

    def done(self) -> None:
        """Remove the object's keep folder (and the <object>.ciq folder that holds it)."""
        shutil.rmtree(self.keep.parent, ignore_errors=True)

    def prune(self) -> None:
        """At most MAX_ENTRIES entries of at most MAX_BYTES together (the least recently used out first; the
        newest always stays) and no folder of an abandoned write."""

        def mtime(p: Path) -> int:
            try:
                return p.stat().st_mtime_ns
            except OSError:
                return 0

        try:
            folders = [p for p in self.root.iterdir() if p.is_dir()]
        except OSError:
            return
        now = time.time_ns()
        for p in folders:
            if p.name.startswith(".new-") and now - mtime(p) > 3600 * 10**9:
                shutil.rmtree(p, ignore_errors=True)
        entries = sorted((p for p in folders if not p.name.startswith(".")), key=mtime, reverse=True)
        total = 0
        for i, entry in enumerate(entries):
            total += _size(entry)
            if i and (i >= MAX_ENTRIES or total > MAX_BYTES):
                shutil.rmtree(entry, ignore_errors=True)


def _size(folder: Path) -> int:
    """The bytes of the files in `folder` (0 when it went meanwhile)."""
    try:
        with os.scandir(folder) as found:
            return sum(e.stat(follow_symlinks=False).st_size for e in found if e.is_file(follow_symlinks=False))
    except OSError:
        return 0


def _run_steps(routed: list[str], steps: list[str], cwd: Path) -> tuple[str, bool]:
    """The ptxas and fatbinary steps run, their output passed on: ("miss <why>" when one failed, else "";
    whether they printed anything)."""
    env = {**os.environ, "PATH": _tool_path(steps)}
    printed = False
    for line in routed:
        proc = subprocess.run(["/bin/sh", "-c", line], cwd=cwd, env=env, capture_output=True, text=True)
        if proc.returncode != 0:
            return f"miss {line.split()[0]} failed: {(proc.stderr or proc.stdout).strip()[:200]}", printed
        for stream, text in ((sys.stdout, proc.stdout), (sys.stderr, proc.stderr)):  # (-Xptxas -v, warnings)
            stream.write(text)
        printed = printed or bool(proc.stdout or proc.stderr)
    return "", printed


def serve(memo: Memo, steps: list[str], routed: list[str], obj: Path, depfile: str, cwd: Path) -> str:
    """Serve the compile from the memo; HIT or HIT_REMEMBERED when done (ptxas ran, or its fatbin was the
    entry's), else "miss <why>" (the compile then runs whole)."""
    entry = memo.entry(steps)
    doc = memo.read(entry)
    changed = _unchanged(memo, steps, entry, doc, cwd)
    if changed or doc is None:
        return changed
    fatbins = [w.split("=", 1)[1].strip('"') for line in routed for w in line.split() if w.startswith("--create=")]
    objcopy = shutil.which("objcopy")
    if len(fatbins) != 1 or not routed[-1].startswith("fatbinary ") or objcopy is None:
        return "miss " + ("no single fatbin to embed" if objcopy else "objcopy not found")
    fatbin = Path(fatbins[0]) if Path(fatbins[0]).is_absolute() else cwd / fatbins[0]
    memo.fresh_keep()
    host = memo.keep / "host.o"  # the entry copied first, then checked to be the one whose state was read: an
    shutil.copyfile(entry / "host.o", host)  # entry replaced by another tree meanwhile is not mixed with the old one
    served, remembered = _device_code(memo, entry, doc, routed, fatbin)
    if memo.read(entry) != doc:
        return "miss the remembered compile was replaced while it was read"
    failed, printed = _run_steps(routed if served == HIT else [], steps, cwd)
    if failed:
        return failed
    temp = obj.with_name(obj.name + ".ciq-tmp")
    proc = subprocess.run(
        [objcopy, f"--update-section=.nv_fatbin={fatbin}", str(host), str(temp)],
        cwd=cwd,
        capture_output=True,
        text=True,
    )
    if proc.returncode != 0:
        temp.unlink(missing_ok=True)
        return f"miss objcopy failed: {proc.stderr.strip()[:200]}"
    depfile_temp = cwd / (depfile + ".ciq-tmp")
    depfile_temp.write_text(memo.local(doc["depfile"]))
    os.replace(depfile_temp, cwd / depfile)
    os.replace(temp, obj)
    try:
        os.utime(entry)  # recently used
        if served == HIT_REMEMBERED:
            os.utime(remembered)
        elif not printed:  # (what ptxas says is said again on each compile: not remembered)
            memo.keep_device_code(entry, doc, routed, fatbin)
            memo.prune()  # (the memo grows here as well as with a whole compile)
    except OSError:  # (the entry went meanwhile: the object stands)
        pass
    memo.done()
    return served


def _device_code(memo: Memo, entry: Path, doc: dict[str, Any], routed: list[str], fatbin: Path) -> tuple[str, Path]:
    """The entry's fatbin of these steps copied into place (HIT_REMEMBERED), else its PTX (HIT: the steps run on
    it); and where the remembered fatbin is."""
    remembered = memo.device_code(entry, doc, routed)
    try:
        shutil.copyfile(remembered, fatbin)
        return HIT_REMEMBERED, remembered
    except OSError:  # (none: these ptxas and fatbinary steps were not run on this entry's PTX before)
        for ptx in entry.glob("*.ptx"):
            shutil.copyfile(ptx, memo.keep / ptx.name)
        return HIT, remembered


def _unchanged(memo: Memo, steps: list[str], entry: Path, doc: dict[str, Any] | None, cwd: Path) -> str:
    """Why the memo's entry cannot serve these steps ("miss <why>"; "" when it can): none remembered for
    them, or a file of its dependency file changed."""
    if doc is None or doc.get("steps") != memo.shared_steps(steps) or "depfile" not in doc:
        return "miss no compile of these front-end and host steps remembered"
    deps = {memo.local(p): digest for p, digest in doc.get("deps", {}).items()}
    if not deps or _digests(list(deps), cwd) != deps:
        return "miss a file of the dependency file changed"
    return ""


def remember(memo: Memo, steps: list[str], routed: list[str], obj: Path, depfile: str, cwd: Path, quiet: bool) -> None:
    """Remember a compile that ran whole with its intermediate files kept (PTX, host object, dependency file;
    the fatbin it embeds when the compile printed nothing, `quiet`: a compile served with it prints nothing).
    Written whole in a folder of its own with a nonce, then renamed into place: a tree that reads the entry
    meanwhile sees the old one, none, or this one (serve checks that what it copied is what it read)."""
    ptx = list(memo.keep.glob("*.ptx"))
    if not ptx or not (cwd / depfile).is_file():  # (served whole by sccache without its files; no dependencies)
        return
    text = (cwd / depfile).read_text()
    doc = {
        "steps": memo.shared_steps(steps),
        "depfile": memo.shared(text),
        "nonce": os.urandom(8).hex(),
        "deps": {memo.shared(p): digest for p, digest in _digests(depfile_paths(text), cwd).items()},
    }
    entry = memo.entry(steps)
    memo.root.mkdir(parents=True, exist_ok=True)
    temp = Path(tempfile.mkdtemp(prefix=".new-", dir=memo.root))
    try:
        for p in ptx:
            os.replace(p, temp / p.name)
        shutil.copyfile(obj, temp / "host.o")
        objcopy = shutil.which("objcopy")
        if quiet and routed and objcopy is not None:  # the fatbin the object embeds, as it embeds it
            code = memo.device_code(temp, doc, routed)
            done = subprocess.run(
                [objcopy, "-O", "binary", "--only-section=.nv_fatbin", str(obj), str(code)], capture_output=True
            )
            if done.returncode != 0 or not code.is_file() or code.stat().st_size == 0:
                code.unlink(missing_ok=True)
        (temp / "state.json").write_text(json.dumps(doc))
        shutil.rmtree(entry, ignore_errors=True)
        os.replace(temp, entry)  # (fails when another tree wrote the same entry meanwhile: theirs stays)
    finally:
        shutil.rmtree(temp, ignore_errors=True)


def main(argv: list[str]) -> int:
    sccache, args = argv[1], argv[2:]
    out, depfile = _value(args, "-o", "--output-file"), _value(args, "-MF", "--dependency-output")
    if not routable(args) or out is None or depfile is None:  # (a routable compile has both)
        os.execvp(sccache, [sccache, *args])
    cwd = Path.cwd()
    obj = cwd / out
    memo = Memo(obj, tree_root(cwd), cwd)
    lines = dryrun([*args, "--keep", f"--keep-dir={memo.keep}"])
    if not lines:  # nvcc -dryrun failed: the compile as it was asked, through sccache
        _log("miss nvcc -dryrun failed")
        memo.done()
        os.execvp(sccache, [sccache, *args])
    steps, routed = split_steps(lines)
    if routed:
        try:
            said = serve(memo, steps, routed, obj, depfile, cwd)
        except Exception as exc:  # (an entry removed while read, a full disk: the compile runs whole)
            said = f"miss {type(exc).__name__}: {exc}"
        _log(said)
        if said in (HIT, HIT_REMEMBERED):
            return 0
    else:
        _log("miss no ptxas step")
    try:
        memo.fresh_keep()
    except OSError:  # no room for nvcc's files: the compile as it was asked
        os.execvp(sccache, [sccache, *args])
    # its output in one stream, in the order it came (as the build tool shows a compile's output)
    proc = subprocess.run(
        [sccache, *args, "--keep", f"--keep-dir={memo.keep}"], cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT
    )
    sys.stdout.flush()
    sys.stdout.buffer.write(proc.stdout)
    sys.stdout.flush()
    returncode = proc.returncode
    if returncode == 0:
        try:
            remember(memo, steps, routed, obj, depfile, cwd, quiet=not proc.stdout)
            memo.prune()
        except Exception:  # what is remembered is a cache: the compile's own result stands
            pass
    memo.done()
    return returncode


if __name__ == "__main__":
    sys.exit(main(sys.argv))
