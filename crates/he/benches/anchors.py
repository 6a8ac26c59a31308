#!/usr/bin/env python3
"""The python-phe and SecretFlow HEU side of obliv-he's figures (run with the anchors venv:
`$(../shared/anchors/setup.sh) crates/he/benches/anchors.py`). Same operations and sizes as
`examples/figures.rs`, reported the same way: thread CPU time per operation (time.thread_time,
robust on a loaded shared machine) and wall time, one JSON line each. The plaintexts follow
../shared/anchors/he_anchors.py (32-bit for python-phe, 20-bit for HEU).

usage: anchors.py [--bits 2048 ...] [--ops 40]
"""
import argparse, json, random, time

def emit(lib, scheme, bits, op, n, fn):
    fn(0)
    c0, w0 = time.thread_time(), time.perf_counter()
    for i in range(n):
        fn(i)
    cpu, wall = (time.thread_time() - c0) / n, (time.perf_counter() - w0) / n
    print(json.dumps({"lib": lib, "scheme": scheme, "bits": bits, "op": op,
                      "cpu_s_per_op": cpu, "wall_s_per_op": wall}), flush=True)

def phe_side(bits, n):
    from phe import paillier
    import phe.util
    lib = "python-phe(gmpy2)" if getattr(phe.util, "HAVE_GMP", False) else "python-phe(pure)"
    emit(lib, "paillier", bits, "keygen", 2, lambda i: paillier.generate_paillier_keypair(n_length=bits))
    pk, sk = paillier.generate_paillier_keypair(n_length=bits)
    xs = [random.getrandbits(32) for _ in range(n)]
    cs = [pk.encrypt(x) for x in xs]
    emit(lib, "paillier", bits, "encrypt", n, lambda i: pk.encrypt(xs[i]))
    emit(lib, "paillier", bits, "decrypt", n, lambda i: sk.decrypt(cs[i]))
    emit(lib, "paillier", bits, "add_ct_ct", n, lambda i: cs[i] + cs[i - 1])
    emit(lib, "paillier", bits, "sub_ct_ct", n, lambda i: cs[i] - cs[i - 1])
    emit(lib, "paillier", bits, "mul_ct_pt", n, lambda i: cs[i] * xs[i - 1])

def heu_side(bits, n):
    from heu import phe
    for name, st in [("ZPaillier", phe.SchemaType.ZPaillier), ("FPaillier", phe.SchemaType.FPaillier),
                     ("ElGamal", phe.SchemaType.ElGamal)]:
        try:
            b = bits if name != "ElGamal" else 256
            if name == "ElGamal" and bits != 2048:
                continue
            emit("heu", name, b, "keygen", 2, lambda i: phe.setup(st, b))
            kit = phe.setup(st, b)
            enc, dec, ev = kit.encryptor(), kit.decryptor(), kit.evaluator()
            xs = [kit.plaintext(random.getrandbits(20)) for _ in range(n)]
            cs = [enc.encrypt(x) for x in xs]
            emit("heu", name, b, "encrypt", n, lambda i: enc.encrypt(xs[i]))
            emit("heu", name, b, "decrypt", n, lambda i: dec.decrypt(cs[i]))
            emit("heu", name, b, "add_ct_ct", n, lambda i: ev.add(cs[i], cs[i - 1]))
            emit("heu", name, b, "sub_ct_ct", n, lambda i: ev.sub(cs[i], cs[i - 1]))
            emit("heu", name, b, "mul_ct_pt", n, lambda i: ev.mul(cs[i], xs[i - 1]))
        except Exception as e:
            print(json.dumps({"lib": "heu", "scheme": name, "bits": bits, "error": str(e)[:200]}), flush=True)

if __name__ == "__main__":
    ap = argparse.ArgumentParser()
    ap.add_argument("--bits", type=int, nargs="+", default=[2048])
    ap.add_argument("--ops", type=int, default=40)
    a = ap.parse_args()
    for b in a.bits:
        heu_side(b, a.ops)
        phe_side(b, a.ops)
