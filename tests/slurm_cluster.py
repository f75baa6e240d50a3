"""A one-node Slurm cluster for tests, from Debian's packages, in a folder of its own.

``SlurmCluster(folder).start()`` writes ``slurm.conf``, ``slurmdbd.conf`` and ``gres.conf`` for this
host on free local ports and starts, each in the foreground as a child of the test, ``munged``
(its own key and socket), ``mariadbd`` (a fresh database for accounting), ``slurmdbd``,
``slurmctld`` and ``slurmd``; ``stop()`` cancels what is still queued and ends them all, killing
any that outlive their grace time. Nothing outside the folder is read or written: every Slurm
command gets ``SLURM_CONF`` pointing into it. The node offers 16 CPUs and 4 GPUs (placeholder
device files: the jobs see ``CUDA_VISIBLE_DEVICES`` but no GPU) so that the project's sbatch
scripts run as shipped, ``--cpus-per-task`` and ``--gres=gpu:1`` included.

Needs root (slurmd starts jobs as their user) and the packages ``slurmctld slurmd slurmdbd
slurm-client munge mariadb-server``; ``unavailable()`` says what is missing.
"""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

DAEMONS = ("munged", "mariadbd", "mariadb-install-db", "slurmdbd", "slurmctld", "slurmd")
COMMANDS = ("sbatch", "squeue", "sacct", "scancel", "sinfo", "scontrol")
PACKAGES = "slurmctld slurmd slurmdbd slurm-client munge mariadb-server"
SEARCH = ("/usr/sbin", "/usr/bin", "/sbin", "/bin")
FINAL_STATES = {"COMPLETED", "FAILED", "CANCELLED", "TIMEOUT", "OUT_OF_MEMORY", "NODE_FAIL", "PREEMPTED",
                "BOOT_FAIL", "DEADLINE"}


def find(name: str) -> str | None:
    path = os.pathsep.join([os.environ.get("PATH", ""), *SEARCH])
    return shutil.which(name, path=path)


def unavailable() -> str | None:
    """Why a cluster cannot be brought up here, or None."""
    if not sys.platform.startswith("linux"):
        return "a Slurm cluster needs Linux"
    missing = [n for n in (*DAEMONS, *COMMANDS) if find(n) is None]
    if missing:
        return (f"Slurm / MUNGE / MariaDB not installed (missing {', '.join(missing)}): "
                f"apt-get install {PACKAGES} (`bash packaging/setup.sh --tests` does, as root)")
    if os.geteuid() != 0:
        return "bringing up slurmd, which starts jobs as their user, needs root"
    return None


def free_ports(n: int) -> list[int]:
    socks = []
    try:
        for _ in range(n):
            s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            s.bind(("127.0.0.1", 0))
            socks.append(s)
        return [s.getsockname()[1] for s in socks]
    finally:
        for s in socks:
            s.close()


def _port_open(port: int) -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.settimeout(0.5)
        return s.connect_ex(("127.0.0.1", port)) == 0


class ClusterError(RuntimeError):
    pass


class SlurmCluster:
    """One controller and one node on this host, configured and kept under ``folder``."""

    def __init__(self, folder: Path, name: str = "t2itest") -> None:
        self.folder = folder
        self.name = name
        self.host = socket.gethostname().split(".")[0] or "localhost"
        self.logs = folder / "log"
        self.conf = folder / "slurm.conf"
        self.procs: list[tuple[str, subprocess.Popen[bytes]]] = []
        self.ctld_port, self.slurmd_port, self.dbd_port, self.db_port = free_ports(4)

    # ---- environment ------------------------------------------------------------------------
    def env(self, extra: Mapping[str, str] | None = None) -> dict[str, str]:
        """The test's environment without any Slurm job's variables, pointed at this cluster."""
        env = {k: v for k, v in os.environ.items() if not k.startswith(("SLURM_", "SBATCH_", "SALLOC_"))}
        env["SLURM_CONF"] = str(self.conf)
        env["PATH"] = os.pathsep.join([env.get("PATH", ""), *SEARCH])
        env.update(extra or {})
        return env

    def run(self, args: Sequence[str], timeout: float = 30, check: bool = True,
            env: Mapping[str, str] | None = None, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
        r = subprocess.run(list(args), env=self.env(env), cwd=cwd, capture_output=True, text=True, timeout=timeout)
        if check and r.returncode != 0:
            raise ClusterError(f"{' '.join(args)} exited {r.returncode}: {r.stdout[-1500:]}{r.stderr[-1500:]}")
        return r

    # ---- configuration ------------------------------------------------------------------------
    def _write_config(self) -> None:
        f = self.folder
        for sub in ("state", "spool", "log", "db", "dev"):
            (f / sub).mkdir(parents=True, exist_ok=True)
        for i in range(4):  # placeholder GPU devices: slurmd wants character devices
            dev = f / "dev" / f"gpu{i}"
            if not dev.exists():
                dev.symlink_to("/dev/null")
        key = f / "munge.key"
        key.write_bytes(os.urandom(1024))
        key.chmod(0o400)
        munge = f / "munge.socket"
        self.conf.write_text(f"""\
ClusterName={self.name}
SlurmctldHost={self.host}(127.0.0.1)
SlurmctldPort={self.ctld_port}
SlurmdPort={self.slurmd_port}
AuthType=auth/munge
AuthInfo=socket={munge}
CredType=cred/munge
SlurmUser=root
SlurmdUser=root
StateSaveLocation={f / 'state'}
SlurmdSpoolDir={f / 'spool'}
SlurmctldPidFile={f / 'slurmctld.pid'}
SlurmdPidFile={f / 'slurmd.pid'}
SlurmctldLogFile={self.logs / 'slurmctld.log'}
SlurmdLogFile={self.logs / 'slurmd.log'}
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/linux
AccountingStorageType=accounting_storage/slurmdbd
AccountingStorageHost=127.0.0.1
AccountingStoragePort={self.dbd_port}
AccountingStoragePass={munge}
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
SlurmdParameters=config_overrides
GresTypes=gpu
ReturnToService=2
MpiDefault=none
MailProg=/bin/true
KillWait=5
NodeName={self.host} NodeAddr=127.0.0.1 CPUs=16 Gres=gpu:4 State=UNKNOWN
PartitionName=debug Nodes={self.host} Default=YES MaxTime=INFINITE State=UP
""")
        (f / "gres.conf").write_text(f"NodeName={self.host} Name=gpu File={f / 'dev'}/gpu[0-3]\n")
        dbd = f / "slurmdbd.conf"
        dbd.write_text(f"""\
AuthType=auth/munge
AuthInfo=socket={munge}
DbdHost=localhost
DbdAddr=127.0.0.1
DbdPort={self.dbd_port}
SlurmUser=root
PidFile={f / 'slurmdbd.pid'}
LogFile={self.logs / 'slurmdbd.log'}
StorageType=accounting_storage/mysql
StorageHost=127.0.0.1
StoragePort={self.db_port}
StorageUser=root
StorageLoc=slurm_acct_db
""")
        dbd.chmod(0o600)

    # ---- daemons ------------------------------------------------------------------------------
    def _spawn(self, name: str, args: Sequence[str]) -> subprocess.Popen[bytes]:
        out = open(self.logs / f"{name}.out", "ab")  # noqa: SIM115 - owned by the child
        try:
            proc = subprocess.Popen(list(args), stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT,
                                    env=self.env(), cwd=self.folder, start_new_session=True)
        finally:
            out.close()
        self.procs.append((name, proc))
        return proc

    def _wait_for(self, what: str, ready: Callable[[], bool], deadline: float) -> None:
        while time.monotonic() < deadline:
            for name, proc in self.procs:
                if proc.poll() is not None:
                    raise ClusterError(f"{name} exited ({proc.returncode}) while waiting for {what}:\n"
                                       + self.log_tail(name))
            if ready():
                return
            time.sleep(0.2)
        raise ClusterError(f"{what} not ready in time\n" + "\n".join(self.log_tail(n) for n, _ in self.procs))

    def log_tail(self, name: str, lines: int = 15) -> str:
        texts = []
        for path in (self.logs / f"{name}.out", self.logs / f"{name}.log"):
            if path.is_file():
                texts.append(f"--- {path.name}\n" + "\n".join(path.read_text(errors="replace").splitlines()[-lines:]))
        return "\n".join(texts)

    def start(self, timeout: float = 120) -> "SlurmCluster":
        deadline = time.monotonic() + timeout
        self._write_config()
        f = self.folder
        munge_socket = f / "munge.socket"
        self._spawn("munged", [find("munged") or "munged", "--foreground", "--force",
                               f"--key-file={f / 'munge.key'}", f"--socket={munge_socket}",
                               f"--pid-file={f / 'munged.pid'}", f"--log-file={self.logs / 'munged.log'}",
                               f"--seed-file={f / 'munged.seed'}"])
        innodb = ["--innodb-log-file-size=4M", "--innodb-buffer-pool-size=16M"]
        r = subprocess.run([find("mariadb-install-db") or "mariadb-install-db", "--no-defaults",
                            f"--datadir={f / 'db'}", "--user=root", "--auth-root-authentication-method=normal",
                            "--skip-test-db", *innodb],
                           capture_output=True, text=True, timeout=max(5.0, deadline - time.monotonic()))
        if r.returncode != 0:
            raise ClusterError(f"mariadb-install-db failed: {r.stdout[-1500:]}{r.stderr[-1500:]}")
        # accounting only: no grant tables, reachable on 127.0.0.1 only, for the life of the test
        self._spawn("mariadbd", [find("mariadbd") or "mariadbd", "--no-defaults", f"--datadir={f / 'db'}",
                                 "--user=root", "--skip-grant-tables", "--bind-address=127.0.0.1",
                                 f"--port={self.db_port}", f"--socket={f / 'mysqld.sock'}",
                                 f"--pid-file={f / 'mysqld.pid'}", f"--log-error={self.logs / 'mariadbd.log'}",
                                 *innodb])
        self._wait_for("munged", munge_socket.exists, deadline)
        self._wait_for("mariadbd", lambda: _port_open(self.db_port), deadline)
        self._spawn("slurmdbd", [find("slurmdbd") or "slurmdbd", "-D"])
        self._wait_for("slurmdbd", lambda: _port_open(self.dbd_port), deadline)
        self._spawn("slurmctld", [find("slurmctld") or "slurmctld", "-D", "-i"])
        self._wait_for("slurmctld", lambda: self.run(["scontrol", "ping"], check=False).returncode == 0, deadline)
        self._spawn("slurmd", [find("slurmd") or "slurmd", "-D", "-N", self.host])
        self._wait_for("the node", lambda: self.run(["sinfo", "-h", "-o", "%t"], check=False).stdout.strip() == "idle",
                       deadline)
        self._wait_for("accounting", lambda: self.name in self.run(
            ["sacctmgr", "-n", "-P", "list", "cluster", "format=cluster"], check=False).stdout, deadline)
        return self

    def stop(self, grace: float = 15) -> None:
        """Cancel every job, wait for the queue to empty (bounded), then end the daemons."""
        if any(n == "slurmctld" and p.poll() is None for n, p in self.procs):
            try:
                self.run(["scancel", "--full", "--user=root"], check=False, timeout=15)
                end = time.monotonic() + grace
                while time.monotonic() < end and self.run(["squeue", "-h"], check=False, timeout=15).stdout.strip():
                    time.sleep(0.5)
            except (subprocess.TimeoutExpired, OSError):
                pass
        for _name, proc in reversed(self.procs):
            if proc.poll() is None:
                proc.send_signal(signal.SIGTERM)
            try:
                proc.wait(timeout=grace)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait(timeout=grace)
        self.procs.clear()
        shutil.rmtree(self.folder / "db", ignore_errors=True)  # the accounting database (~80 MB)

    # ---- jobs ---------------------------------------------------------------------------------
    def sacct(self, job_ids: Iterable[str]) -> dict[str, dict[str, str]]:
        """The accounting records of jobs (array tasks as ``<array>_<task>``), by job id."""
        fields = ("JobID", "JobName", "State", "ExitCode", "Elapsed", "Reason")
        r = self.run(["sacct", "-X", "-n", "-P", "-j", ",".join(job_ids), "-o", ",".join(fields)], check=False)
        out: dict[str, dict[str, str]] = {}
        for line in r.stdout.splitlines():
            parts = line.split("|")
            if len(parts) == len(fields):
                rec = dict(zip(fields, parts))
                rec["State"] = rec["State"].split()[0]  # "CANCELLED by 0" → "CANCELLED"
                out[rec["JobID"]] = rec
        return out

    def queued(self, job_ids: Iterable[str]) -> list[str]:
        """squeue's lines for these jobs (pending or running)."""
        r = self.run(["squeue", "-h", "-j", ",".join(job_ids), "-o", "%i %T %r"], check=False)
        return [ln for ln in r.stdout.splitlines() if ln.strip()]

    def wait_final(self, job_ids: Sequence[str], timeout: float, count: int | None = None) -> dict[str, dict[str, str]]:
        """Wait until squeue holds none of the jobs and sacct records every one (``count`` records:
        one per array task) in a final state; their records. A ClusterError names what was
        still pending at the deadline."""
        deadline = time.monotonic() + timeout
        recs: dict[str, dict[str, str]] = {}
        queued: list[str] = []
        while time.monotonic() < deadline:
            queued = self.queued(job_ids)
            if not queued:
                recs = self.sacct(job_ids)
                final = [r for r in recs.values() if r["State"] in FINAL_STATES]
                if final and len(final) == len(recs) and (count is None or len(recs) >= count):
                    return recs
            time.sleep(0.5)
        raise ClusterError(f"jobs {', '.join(job_ids)} not finished in {timeout:.0f} s: squeue {queued}, sacct {recs}")


# ---- the shard pipeline's projects ------------------------------------------------------------------
def project_summary(folder: Path) -> dict[str, Any]:
    """What a user compares between two projects of the same job: each sample's settings and image
    bytes (SHA-256), every detection, and the checker's verdict for each sample (active config)."""
    import hashlib

    from workstation.methods.spatial.store import SpatialStore
    from workstation.store import Project

    with Project.open(folder, read_only=True) as p:
        samples = {r[0]: r[1:] for r in p.con.execute(
            "SELECT sample_id, run_id, prompt_id, seed, image_path, width, height FROM samples").fetchall()}
        dets = sorted(p.con.execute(
            "SELECT sample_id, source, detector, variant, label, round(score, 6), round(x1, 3), round(y1, 3), "
            "round(x2, 3), round(y2, 3) FROM detections").fetchall())
        cfg = SpatialStore(p).active_config_id()  # None in a shard project: shards are not evaluated
        verdicts = {} if cfg is None else {r[0]: r[1:] for r in p.con.execute(
            "SELECT sample_id, verdict, reason, round(conf, 6) FROM spatial_verdicts WHERE eval_id = ?",
            [cfg]).fetchall()}
    images = {sid: hashlib.sha256((folder / row[3]).read_bytes()).hexdigest() for sid, row in samples.items()}
    return {"samples": samples, "images": images, "detections": dets, "verdicts": verdicts}


def one_machine_run(folder: Path, *, pairs: int, seeds: int, run_id: str, timeout: float = 300) -> Path:
    """generate, detect and evaluate the same job on this machine, in one project."""
    root = Path(__file__).resolve().parents[1]
    env = {k: v for k, v in os.environ.items() if not k.startswith("SLURM_") and k != "WORKSTATION_SHARDS"}
    main = [sys.executable, str(root / "main.py")]
    for args in (["generate", "--project", str(folder), "--suite", "builtin", "--pairs", str(pairs), "--model",
                  "procedural", "--seeds", str(seeds), "--run-id", run_id],
                 ["detect", "--project", str(folder), "--detector", "scene"],
                 ["evaluate", "--project", str(folder)]):
        r = subprocess.run([*main, *args], env=env, capture_output=True, text=True, timeout=timeout)
        if r.returncode != 0:
            raise RuntimeError(f"{' '.join(args[:1])} failed: {r.stdout[-2000:]}{r.stderr[-2000:]}")
    return folder
