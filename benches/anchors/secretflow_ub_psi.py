#!/usr/bin/env python3
"""SecretFlow's unbalanced PSI (ECDH-OPRF, `spu.psi.ub_psi_execute`), phase by phase.

The counterpart of `cargo run -p obliv-psi --release --example ub_psi_figures`: a server
with --server-n ids and a client with --client-n ids, half of them in the server's set
(distinct random integers below 2**62 in decimal, as ../shared/anchors/secretflow_psi.py
generates them). Each party runs in its own process, linked by brpc over 127.0.0.1.

Phases, each timed from the first party's start to the last party's end:
  offline  UbPsiMode.MODE_OFFLINE: the server evaluates the OPRF on its set, keeps its own
           cache and streams the shuffled values to the client, which stores its cache.
  online   UbPsiMode.MODE_ONLINE, --online-runs times with the same caches: the client's
           blinded query, the server's evaluation, the client's look-up (and, with
           --server-get-result, the indices returned to the server).

Bytes are the TCP payload the two processes put on the wire during the phase (the sum
over both parties of tcpi_bytes_sent, struct tcp_info, read just before and after).

Run it with the anchors venv (../shared/anchors/setup.sh prints its python):
  ~/.cache/obliv-anchors/bin/python benches/anchors/secretflow_ub_psi.py \
      --server-n 1e6 --client-n 1e3 [--server-get-result] [--online-runs 2] [--repeat 2]
Prints one JSON line per phase on stdout; the library's logs go to a file per party.

The API (spu wheel, spu/libpsi.pyi): UbPsiExecuteConfig(mode, role, server_receive_result,
client_receive_result, cache_path, input_params, output_params, server_params=
UbPsiServerParams(secret_key_path)); the curve is FourQ (ECDH-OPRF, not configurable).
"""

from __future__ import annotations

import argparse
import json
import multiprocessing as mp
import os
import random
import shutil
import socket
import struct
import sys
import tempfile
import time
import traceback

_TCPI_BYTES_RECEIVED = 128
_TCPI_BYTES_SENT = 200
_TCPI_LEN = 208


def parse_size(tok: str) -> int:
    t = tok.strip().replace("_", "")
    if "^" in t:
        b, e = t.split("^", 1)
        return int(b) ** int(e)
    return int(float(t))


def tcp_sent() -> int:
    """Bytes sent over this process's TCP sockets (tcpi_bytes_sent)."""
    total = 0
    for name in os.listdir("/proc/self/fd"):
        try:
            fd = int(name)
            if not os.readlink(f"/proc/self/fd/{name}").startswith("socket:"):
                continue
            s = socket.fromfd(fd, socket.AF_INET, socket.SOCK_STREAM)
        except OSError:
            continue
        try:
            info = s.getsockopt(socket.IPPROTO_TCP, socket.TCP_INFO, 256)
        except OSError:
            info = b""
        finally:
            s.close()
        if len(info) >= _TCPI_LEN:
            total += struct.unpack_from("<Q", info, _TCPI_BYTES_SENT)[0]
    return total


def write_ids(path: str, ids: list) -> None:
    with open(path, "w", buffering=1 << 22) as f:
        f.write("id\n")
        for i in range(0, len(ids), 1 << 18):
            f.write("\n".join(map(str, ids[i:i + (1 << 18)])))
            f.write("\n")


def gen_data(d: str, n_server: int, n_client: int, seed: int):
    common = n_client // 2
    rng = random.Random(f"psi-unbalanced/{seed}/{n_server}/{n_client}")
    pool = rng.sample(range(1 << 62), n_server + n_client - common)
    server, client = pool[:n_server], pool[:common] + pool[n_server:]
    rng.shuffle(server)
    rng.shuffle(client)
    paths = [os.path.join(d, "server.csv"), os.path.join(d, "client.csv")]
    write_ids(paths[0], server)
    write_ids(paths[1], client)
    return paths, common


def party(rank: int, job: dict, q) -> None:
    """Rank 0 is the server, rank 1 the client. Reports per-phase times and bytes."""
    res = {"rank": rank, "ok": False, "phases": []}
    try:
        fd = os.open(job["logs"][rank], os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
        os.dup2(fd, 1)
        os.dup2(fd, 2)
        tmp = os.path.join(job["dir"], f"tmp_{rank}")
        os.makedirs(tmp, exist_ok=True)
        os.environ["TMPDIR"] = tmp
        import spu.libspu.link as link
        import spu.psi as psi

        desc = link.Desc()
        desc.id = job["link_id"]
        for i, h in enumerate(job["hosts"]):
            desc.add_party(f"party{i}", h)
        desc.connect_retry_times = 120
        desc.connect_retry_interval_ms = 500
        desc.recv_timeout_ms = 4 * 3600 * 1000
        desc.http_timeout_ms = 300 * 1000
        lctx = link.create_brpc(desc, rank)
        lctx.barrier()

        server = rank == 0
        role = psi.UbPsiRole.ROLE_SERVER if server else psi.UbPsiRole.ROLE_CLIENT
        csv = psi.SourceType.SOURCE_TYPE_FILE_CSV

        def config(mode):
            c = psi.UbPsiExecuteConfig(
                mode=mode, role=role, cache_path=job["caches"][rank],
                server_receive_result=job["server_get_result"], client_receive_result=True)
            if server:
                c.server_params = psi.UbPsiServerParams(secret_key_path=job["key"])
            online = mode == psi.UbPsiMode.MODE_ONLINE
            if server or online:
                c.input_params = psi.InputParams(type=csv, path=job["inputs"][rank],
                                                 selected_keys=["id"], keys_unique=True)
            if online:
                c.output_params = psi.OutputParams(type=csv, path=job["outputs"][rank],
                                                   disable_alignment=True)
            return c

        phases = [("offline", psi.UbPsiMode.MODE_OFFLINE)]
        phases += [("online", psi.UbPsiMode.MODE_ONLINE)] * job["online_runs"]
        for name, mode in phases:
            cfg = config(mode)
            lctx.barrier()
            b0, t0 = tcp_sent(), time.time()
            rep = psi.ub_psi_execute(cfg, lctx)
            t1, b1 = time.time(), tcp_sent()
            res["phases"].append({"phase": name, "t0": t0, "t1": t1, "sent": b1 - b0,
                                  "intersection": rep.intersection_count})
        lctx.barrier()
        lctx.stop_link()
        res["ok"] = True
    except BaseException as e:  # report, never hang the parent
        res["error"] = f"{type(e).__name__}: {e}"
        res["traceback"] = traceback.format_exc()
    q.put(res)


def free_ports(k: int):
    socks = [socket.socket() for _ in range(k)]
    for s in socks:
        s.bind(("127.0.0.1", 0))
    ports = [s.getsockname()[1] for s in socks]
    for s in socks:
        s.close()
    return ports


def run(args, inputs, expected, workdir, rep) -> int:
    d = tempfile.mkdtemp(prefix=f"ub_rep{rep}_", dir=workdir)
    job = {
        "dir": d, "inputs": inputs, "online_runs": args.online_runs,
        "server_get_result": args.server_get_result,
        "hosts": [f"127.0.0.1:{p}" for p in free_ports(2)],
        "link_id": f"ub-anchor-{os.getpid()}-{time.time_ns()}",
        "caches": [os.path.join(d, "server_cache"), os.path.join(d, "client_cache")],
        "key": os.path.join(d, "server_secret.key"),
        "outputs": [os.path.join(d, "server_out.csv"), os.path.join(d, "client_out.csv")],
        "logs": [os.path.join(d, "server.log"), os.path.join(d, "client.log")],
    }
    with open(job["key"], "wb") as f:  # benchmark-only key, never for real data
        f.write(random.Random(f"ub-key/{args.seed}").randbytes(32))
    ctx = mp.get_context("spawn")
    q = ctx.Queue()
    procs = [ctx.Process(target=party, args=(r, job, q)) for r in range(2)]
    for p in procs:
        p.start()
    results, deadline = {}, time.time() + args.timeout
    while len(results) < 2 and time.time() < deadline:
        try:
            r = q.get(timeout=1.0)
            results[r["rank"]] = r
        except Exception:
            if all(not p.is_alive() for p in procs) and q.empty():
                break
    for p in procs:
        p.join(timeout=30)
        if p.is_alive():
            p.kill()
    failures = 0
    if len(results) < 2 or not all(r["ok"] for r in results.values()):
        for r in results.values():
            print(r.get("traceback", ""), file=sys.stderr)
        for lp in job["logs"]:
            try:
                with open(lp, errors="replace") as f:
                    print(f"---- {lp}\n{f.read()[-3000:]}", file=sys.stderr)
            except OSError:
                pass
        print(json.dumps({"impl": "secretflow", "rep": rep, "error": "party failed"}))
        failures = 1
    else:
        srv, cli = results[0]["phases"], results[1]["phases"]
        online_run = 0
        for s, c in zip(srv, cli):
            online_run += s["phase"] == "online"
            out = {"impl": "secretflow", "phase": s["phase"], "rep": rep,
                   "curve": "FourQ (built in)", "server_n": args.server_n,
                   "client_n": args.client_n, "server_get_result": args.server_get_result,
                   "seconds": round(max(s["t1"], c["t1"]) - min(s["t0"], c["t0"]), 3),
                   "bytes": s["sent"] + c["sent"],
                   "threads": int(os.environ.get("YACL_NUM_THREADS", "0")) or os.cpu_count()}
            if s["phase"] == "offline":
                out["cache_bytes"] = {"client": dir_bytes(job["caches"][1]),
                                      "server": dir_bytes(job["caches"][0])}
            else:
                out["run"] = online_run
                out["intersection"] = c["intersection"]
                out["correct"] = c["intersection"] == expected and (
                    not args.server_get_result or s["intersection"] == expected)
                failures += 0 if out["correct"] else 1
            print(json.dumps(out), flush=True)
    if not args.keep:
        shutil.rmtree(d, ignore_errors=True)
    return failures


def dir_bytes(path: str) -> int:
    if os.path.isfile(path):
        return os.path.getsize(path)
    total = 0
    for root, _, files in os.walk(path):
        total += sum(os.path.getsize(os.path.join(root, f)) for f in files)
    return total


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--server-n", type=parse_size, default=10 ** 6)
    ap.add_argument("--client-n", type=parse_size, default=10 ** 3)
    ap.add_argument("--server-get-result", action="store_true",
                    help="server_receive_result: the server learns the intersection too")
    ap.add_argument("--online-runs", type=int, default=2,
                    help="online phases run one after the other on the same caches")
    ap.add_argument("--repeat", type=int, default=1, help="whole runs (offline + online)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--timeout", type=float, default=3600.0, help="per run, seconds")
    ap.add_argument("--workdir", default=None)
    ap.add_argument("--keep", action="store_true", help="keep the run dirs (logs, caches)")
    args = ap.parse_args()
    workdir = tempfile.mkdtemp(prefix="sf_ub_psi_", dir=args.workdir)
    failures = 0
    try:
        inputs, expected = gen_data(workdir, args.server_n, args.client_n, args.seed)
        for rep in range(1, args.repeat + 1):
            print(f"# SecretFlow ub-psi server {args.server_n} client {args.client_n} "
                  f"rep {rep}", file=sys.stderr, flush=True)
            failures += run(args, inputs, expected, workdir, rep)
    finally:
        if not args.keep:
            shutil.rmtree(workdir, ignore_errors=True)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
