"""A one-node SLURM on this machine, for testing the SLURM profile for real.

`ensure_installed()` installs Debian's slurm-wlm and munge when they are absent and it may
(root, apt-get); `LocalSlurm` starts munged, slurmctld and slurmd with a private slurm.conf,
munge key and socket in a state folder, and stops exactly the processes it started. Client
commands (sbatch, squeue, sinfo) find the private cluster through ``SLURM_CONF`` in
`LocalSlurm.env`, so nothing under /etc is touched and a cluster already configured on the
machine is reused instead of shadowed.
"""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path

SLURM_PACKAGES = ("slurm-wlm", "munge")
DAEMONS = ("munged", "slurmctld", "slurmd")
CLIENTS = ("sbatch", "squeue", "sinfo", "scontrol", "srun")
# The daemons live in /usr/sbin, which is not on every user's PATH.
SEARCH_PATH = os.pathsep.join([os.environ.get("PATH", ""), "/usr/sbin", "/usr/bin", "/sbin"])
# The executor plugin's first status check comes 40-180 s after submission and squeue only
# remembers finished jobs for MinJobAge seconds: keep them well apart.
MIN_JOB_AGE_S = 600
PARTITION = "debug"
# The executor plugin strips SLURM_CONF from the environment of the `srun` it runs inside
# each job, so srun reads the default /etc/slurm/slurm.conf: we write it there when it is
# absent (or a stale one of ours), marked, and remove it when the cluster stops.
SYSTEM_CONF = Path("/etc/slurm/slurm.conf")
MARKER = (
    "# Written by fairforge tests/helpers/slurm_cluster.py; removed when its test cluster stops.\n"
)


def which(name: str) -> str | None:
    return shutil.which(name, path=SEARCH_PATH)


def missing_binaries() -> list[str]:
    return [name for name in (*DAEMONS, *CLIENTS) if which(name) is None]


def ensure_installed(timeout_s: float = 1200) -> str | None:
    """Install slurm-wlm and munge if absent; return why SLURM is unusable, or None."""
    missing = missing_binaries()
    if not missing:
        return None
    if os.geteuid() != 0:
        return f"SLURM is not installed ({', '.join(missing)} missing) and we are not root"
    if which("apt-get") is None:
        return f"SLURM is not installed ({', '.join(missing)} missing) and apt-get is absent"
    env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive", "PATH": SEARCH_PATH}
    for cmd in (["apt-get", "update", "-q"], ["apt-get", "install", "-y", "-q", *SLURM_PACKAGES]):
        try:
            proc = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=timeout_s)
        except subprocess.TimeoutExpired:
            return f"`{' '.join(cmd)}` did not finish in {timeout_s:.0f} s"
        if proc.returncode != 0:
            return f"`{' '.join(cmd)}` failed: {(proc.stderr or proc.stdout)[-600:]}"
    missing = missing_binaries()
    return f"still missing after apt-get install: {', '.join(missing)}" if missing else None


def node_hardware() -> dict[str, int]:
    """What slurmd will detect (`slurmd -C`), so the configured node is never drained."""
    out = subprocess.run([which("slurmd"), "-C"], capture_output=True, text=True, timeout=30).stdout
    fields = dict(item.split("=", 1) for item in out.split() if "=" in item)
    keys = ("CPUs", "Boards", "SocketsPerBoard", "CoresPerSocket", "ThreadsPerCore", "RealMemory")
    if all(k in fields for k in keys):
        return {k: int(fields[k]) for k in keys}
    cpus = len(os.sched_getaffinity(0))
    mem_mb = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") // 2**20
    return {"CPUs": cpus, "RealMemory": int(mem_mb)}


def free_ports(n: int) -> list[int]:
    """n distinct free TCP ports (held open together, so they cannot coincide)."""
    socks = [socket.socket(socket.AF_INET, socket.SOCK_STREAM) for _ in range(n)]
    try:
        for sock in socks:
            sock.bind(("127.0.0.1", 0))
        return [sock.getsockname()[1] for sock in socks]
    finally:
        for sock in socks:
            sock.close()


def slurm_conf(
    state_dir: Path,
    host: str,
    hardware: dict[str, int],
    ctld_port: int,
    slurmd_port: int,
    munge_socket: Path,
) -> str:
    node = " ".join(f"{k}={v}" for k, v in hardware.items())
    s = state_dir
    return f"""\
ClusterName=local
SlurmctldHost={host}(127.0.0.1)
SlurmctldPort={ctld_port}
SlurmdPort={slurmd_port}
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket={munge_socket}
StateSaveLocation={s}/ctld
SlurmdSpoolDir={s}/spool
SlurmctldPidFile={s}/slurmctld.pid
SlurmdPidFile={s}/slurmd.pid
SlurmctldLogFile={s}/log/slurmctld.log
SlurmdLogFile={s}/log/slurmd.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core_Memory
SchedulerType=sched/backfill
ReturnToService=2
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/none
MailProg=/bin/true
MpiDefault=none
MinJobAge={MIN_JOB_AGE_S}
NodeName={host} NodeAddr=127.0.0.1 {node} State=UNKNOWN
PartitionName={PARTITION} Nodes={host} Default=YES MaxTime=INFINITE State=UP
"""


@dataclass
class LocalSlurm:
    """A one-node cluster; `start()` reuses a running one, `stop()` ends only ours."""

    state_dir: Path
    env: dict[str, str] = field(default_factory=lambda: {**os.environ, "PATH": SEARCH_PATH})
    started: dict[str, subprocess.Popen] = field(default_factory=dict)
    partition: str = PARTITION
    node_memory_mb: int = 0
    node_cpus: int = 0
    wrote_system_conf: bool = False

    @property
    def pids(self) -> dict[str, int]:
        """The daemons this object started and still holds."""
        return {name: proc.pid for name, proc in self.started.items()}

    def sinfo(self, fmt: str) -> str | None:
        try:
            proc = subprocess.run(
                ["sinfo", "-h", "-o", fmt], env=self.env, capture_output=True, text=True, timeout=20
            )
        except subprocess.TimeoutExpired:
            return None
        return proc.stdout.strip() if proc.returncode == 0 else None

    def idle_node(self) -> bool:
        states = self.sinfo("%t")
        return bool(states) and any(s.strip("*~#") in ("idle", "mix") for s in states.split())

    def start(self, timeout_s: float = 90) -> None:
        if self.idle_node():  # a cluster is already up and configured for this machine
            self._read_partition()
            return
        if os.geteuid() != 0:
            raise RuntimeError("starting a local SLURM needs root (slurmd launches jobs)")
        s = self.state_dir
        for sub in ("ctld", "spool", "log", "munge"):
            (s / sub).mkdir(parents=True, exist_ok=True)
        os.chmod(s / "munge", 0o700)
        munge_socket = s / "munge" / "munge.socket"
        key = s / "munge" / "munge.key"
        if not key.exists():
            key.write_bytes(os.urandom(1024))
            os.chmod(key, 0o600)
        host = socket.gethostname().split(".")[0]
        conf = s / "slurm.conf"
        ctld_port, slurmd_port = free_ports(2)
        conf.write_text(
            MARKER + slurm_conf(s, host, node_hardware(), ctld_port, slurmd_port, munge_socket)
        )
        self._install_system_conf(conf)
        self.env["SLURM_CONF"] = str(conf)
        try:
            self._spawn(
                "munged",
                [
                    which("munged"),
                    "--foreground",
                    "--force",
                    f"--socket={munge_socket}",
                    f"--key-file={key}",
                    f"--pid-file={s}/munge/munged.pid",
                    f"--log-file={s}/log/munged.log",
                    f"--seed-file={s}/munge/munged.seed",
                ],
            )
            self._wait(lambda: munge_socket.exists(), 20, "munged did not create its socket")
            self._spawn("slurmctld", [which("slurmctld"), "-D", "-i", "-f", str(conf)])
            self._wait(self._controller_up, 30, "slurmctld did not answer `scontrol ping`")
            self._spawn("slurmd", [which("slurmd"), "-D", "-f", str(conf), "-N", host])
            self._wait(self.idle_node, timeout_s, "the node never became idle in sinfo")
        except Exception:
            self.stop()
            raise
        self._read_partition()

    def stop(self) -> None:
        """End the daemons this object started (newest first), by their own pids."""
        if "slurmctld" in self.started:  # our private cluster: its jobs go with it
            self._cancel_jobs()
        if self.wrote_system_conf and SYSTEM_CONF.is_file():
            if SYSTEM_CONF.read_text().startswith(MARKER):
                SYSTEM_CONF.unlink()
            self.wrote_system_conf = False
        for name in reversed(list(self.started)):
            proc = self.started.pop(name)
            if proc.poll() is None:
                os.kill(proc.pid, signal.SIGTERM)
                try:
                    proc.wait(timeout=20)
                except subprocess.TimeoutExpired:
                    os.kill(proc.pid, signal.SIGKILL)
                    proc.wait(timeout=10)

    def logs(self) -> str:
        """The tails of the daemon logs, for failure messages."""
        parts = []
        for path in sorted((self.state_dir / "log").glob("*.log")):
            parts.append(f"--- {path.name}\n{path.read_text(errors='replace')[-3000:]}")
        return "\n".join(parts)

    def _cancel_jobs(self, timeout_s: float = 30) -> None:
        try:
            ids = subprocess.run(
                ["squeue", "-h", "-t", "PD,R,CG", "-o", "%i"],
                env=self.env,
                capture_output=True,
                text=True,
                timeout=20,
            ).stdout.split()
            if ids:
                subprocess.run(["scancel", *ids], env=self.env, capture_output=True, timeout=20)
                self._wait(
                    lambda: (
                        not subprocess.run(
                            ["squeue", "-h", "-t", "PD,R,CG", "-o", "%i"],
                            env=self.env,
                            capture_output=True,
                            text=True,
                            timeout=20,
                        ).stdout.split()
                    ),
                    timeout_s,
                    "jobs did not end after scancel",
                )
        except (subprocess.TimeoutExpired, RuntimeError):
            pass  # stopping the daemons below still ends the cluster

    def _install_system_conf(self, conf: Path) -> None:
        if SYSTEM_CONF.exists() and not SYSTEM_CONF.read_text().startswith(MARKER):
            raise RuntimeError(
                f"{SYSTEM_CONF} exists but no SLURM answers: start that "
                "cluster, or move the file away to let the test start its own"
            )
        SYSTEM_CONF.parent.mkdir(parents=True, exist_ok=True)
        SYSTEM_CONF.write_text(conf.read_text())
        self.wrote_system_conf = True

    def _spawn(self, name: str, cmd: list[str]) -> None:
        log = open(self.state_dir / "log" / f"{name}.out", "ab")
        self.started[name] = subprocess.Popen(
            cmd,
            env=self.env,
            stdout=log,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            start_new_session=True,
        )
        log.close()

    def _controller_up(self) -> bool:
        proc = subprocess.run(
            ["scontrol", "ping"], env=self.env, capture_output=True, text=True, timeout=20
        )
        return "is UP" in proc.stdout

    def _wait(self, ready, timeout_s: float, message: str) -> None:
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            dead = [n for n, p in self.started.items() if p.poll() is not None]
            if dead:
                raise RuntimeError(f"{', '.join(dead)} exited early\n{self.logs()}")
            if ready():
                return
            time.sleep(0.5)
        raise RuntimeError(f"{message} within {timeout_s:.0f} s\n{self.logs()}")

    def _read_partition(self) -> None:
        rows = (self.sinfo("%P %c %m") or "").split("\n")
        default = next((r for r in rows if r.split()[0].endswith("*")), rows[0]).split()
        self.partition = default[0].rstrip("*")
        self.node_cpus = int(default[1].rstrip("+"))
        self.node_memory_mb = int(default[2].rstrip("+"))


def profile_for_node(
    profile: dict, *, partition: str, cpus: int, memory_mb: int, gpu_rules: tuple[str, ...] = ()
) -> dict:
    """The profile with the edits a user makes for this one CPU node, and nothing else.

    Partitions become the node's, `gpu` becomes 0 for ``gpu_rules`` (the node has no
    GRES), threads are capped to half the node and memory requests to what it has; every other
    setting (executor, status command, retries, runtimes, cpus_per_gpu...) stays as is.
    """

    def fit(entry: str) -> str | None:
        target, _, value = entry.partition("=")
        name = target.rsplit(":", 1)[-1]
        if name == "slurm_partition":
            return f"{target}='{partition}'"
        if name == "mem_mb":
            return f"{target}=min({value}, {memory_mb})"
        if name in ("gpu", "gpu_model"):
            return None
        return entry

    out = dict(profile)
    out["default-resources"] = [
        e for e in map(fit, profile.get("default-resources", [])) if e is not None
    ]
    if not any(e.startswith("slurm_partition=") for e in out["default-resources"]):
        out["default-resources"].append(f"slurm_partition='{partition}'")
    out["set-resources"] = [
        e for e in map(fit, profile.get("set-resources", [])) if e is not None
    ] + [f"{rule}:gpu=0" for rule in gpu_rules]
    # Half the node per job: two jobs run side by side, as many do on a real cluster. One
    # thread each also matches the local run's, which CPU training needs to give the same
    # weights (the thread count changes the order of floating-point sums).
    out["set-threads"] = {
        rule: min(int(n), max(1, cpus // 2))
        for rule, n in (profile.get("set-threads") or {}).items()
    }
    return out
