"""The built image run the way a container runtime runs it, without a daemon.

`make image` builds it into buildah's local storage. `RunningImage` takes a
fresh container of it (`buildah from` + `buildah mount`) and starts the
image's own ENTRYPOINT + CMD, environment and working directory, as the
image's USER (root when it sets none, as every runtime does), in a chroot of
that root filesystem mounted read-only, in its own mount and PID namespaces
(the entrypoint is PID 1), with what the Deployment gives it: a tmpfs /tmp, the
catalog ConfigMap at /etc/hapi/catalog and the settings ConfigMap as the
environment. It shares the machine's network, so the settings move the ports
to free loopback ones.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import psutil
import pytest

ROOT = Path(__file__).resolve().parents[2]
BUILDAH = ["buildah", "--storage-driver", "vfs"]
BUILD_COMMAND = "`make image` (or `./scripts/build_image.sh`)"

# Runs under `unshare --mount --pid --fork`: $1 root filesystem, $2 catalog
# directory, $3 user:group, then the environment and the command for env(1).
_LAUNCH = r"""
set -eu
rootfs="$1" catalog="$2" user="$3"
shift 3
mount --make-rprivate /
mkdir -p "$rootfs/proc" "$rootfs/dev" "$rootfs/tmp" "$rootfs/etc/hapi/catalog"
mount --bind "$rootfs" "$rootfs"
mount -t proc proc "$rootfs/proc"
mount --rbind /dev "$rootfs/dev"
mount -t tmpfs -o size=64m,mode=1777,nosuid,nodev tmpfs "$rootfs/tmp"
mount --bind -o ro "$catalog" "$rootfs/etc/hapi/catalog"
mount -o remount,bind,ro "$rootfs"
exec chroot --userspec="$user" "$rootfs" /usr/bin/env -i "$@"
"""


def _buildah(*args: str, timeout: float = 300) -> str:
    result = subprocess.run(
        [*BUILDAH, *args], capture_output=True, text=True, timeout=timeout, check=False
    )
    if result.returncode != 0:
        raise RuntimeError(f"buildah {' '.join(args)}: {result.stderr.strip()}")
    return result.stdout.strip()


def image_config(ref: str) -> dict[str, Any]:
    """The OCI config of a local image; fails the run (never skips) when absent."""
    if shutil.which("buildah") is None:
        pytest.fail(f"buildah is not installed: build the image with {BUILD_COMMAND}", False)
    try:
        raw = _buildah("inspect", "--type", "image", ref)
    except RuntimeError as exc:
        pytest.fail(f"image {ref} not found ({exc}): build it with {BUILD_COMMAND}", False)
    return dict(json.loads(raw)["OCIv1"].get("config") or {})


def tree_size(root: Path) -> int:
    """Bytes of the files under root, each hard-linked file counted once."""
    seen: set[tuple[int, int]] = set()
    total = 0
    for directory, _, files in os.walk(root):
        for name in files:
            info = os.lstat(os.path.join(directory, name))
            if (info.st_dev, info.st_ino) not in seen:
                seen.add((info.st_dev, info.st_ino))
                total += info.st_size
    return total


def user_of(config: dict[str, Any]) -> str:
    """The image's USER as uid:gid, root when unset; names are not resolved."""
    user = str(config.get("User") or "0")
    uid, _, gid = user.partition(":")
    return f"{uid}:{gid or uid}"


def home_of(rootfs: Path, user: str) -> str:
    """HOME as runtimes set it: the user's passwd entry in the image, else "/"."""
    uid = user.split(":")[0]
    try:
        lines = (rootfs / "etc" / "passwd").read_text(encoding="utf-8").splitlines()
    except OSError:
        lines = []
    for line in lines:
        fields = line.split(":")
        if len(fields) >= 6 and fields[2] == uid:
            return fields[5] or "/"
    return "/"


@dataclass
class RunningImage:
    ref: str
    catalog_dir: Path
    settings: dict[str, str]
    config: dict[str, Any] = field(default_factory=dict)
    container: str = ""
    rootfs: Path = Path()
    proc: subprocess.Popen[bytes] | None = None
    log_path: Path = Path()

    def start(self, log_path: Path) -> None:
        self.config = image_config(self.ref)
        self.container = _buildah("from", "--pull=never", self.ref)
        self.rootfs = Path(_buildah("mount", self.container))
        env = [e for e in self.config.get("Env") or [] if e.split("=", 1)[0] not in self.settings]
        env += [f"{key}={value}" for key, value in self.settings.items()]
        if not any(e.startswith("HOME=") for e in env):
            env.append(f"HOME={home_of(self.rootfs, user_of(self.config))}")
        command = [*(self.config.get("Entrypoint") or []), *(self.config.get("Cmd") or [])]
        assert command, "the image defines no ENTRYPOINT or CMD"
        workdir = self.config.get("WorkingDir") or "/"
        # env(1) --chdir: the image's WORKDIR, as a runtime starts it.
        argv = [
            "unshare", "--mount", "--pid", "--fork", "--kill-child",
            "sh", "-c", _LAUNCH, "launch",
            str(self.rootfs), str(self.catalog_dir), user_of(self.config),
            f"--chdir={workdir}", *env, *command,
        ]  # fmt: skip
        self.log_path = log_path
        with log_path.open("wb") as log:
            self.proc = subprocess.Popen(
                argv, stdout=log, stderr=subprocess.STDOUT, start_new_session=True
            )

    def entrypoint_process(self, timeout: float = 10.0) -> psutil.Process:
        """The entrypoint (PID 1 of the container), once sh and chroot exec'd into it."""
        assert self.proc is not None
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            children = psutil.Process(self.proc.pid).children()
            if children and children[0].name() not in ("sh", "chroot", "env"):
                return children[0]
            time.sleep(0.05)
        raise RuntimeError(f"entrypoint not started:\n{self.log()}")

    def exited(self) -> int | None:
        return None if self.proc is None else self.proc.poll()

    def log(self) -> str:
        try:
            return self.log_path.read_text(errors="replace")[-4000:]
        except OSError:
            return ""

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            for child in psutil.Process(self.proc.pid).children():
                child.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                os.killpg(self.proc.pid, signal.SIGKILL)
                self.proc.wait(timeout=10)
        if self.container:
            subprocess.run([*BUILDAH, "umount", self.container], capture_output=True, timeout=60)
            subprocess.run([*BUILDAH, "rm", self.container], capture_output=True, timeout=300)
            self.container = ""
