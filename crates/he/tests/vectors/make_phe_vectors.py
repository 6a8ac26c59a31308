#!/usr/bin/env python3
"""Known-answer vectors for obliv-he's Paillier against python-phe (PyPI `phe` 1.5.0,
https://github.com/data61/python-paillier), run offline once; the Rust tests never call Python.

step 1 (`phe`):   python-phe generates a 2048-bit key, encodes and encrypts integers and floats,
                  and writes the key, the encodings and the ciphertexts to phe_interop.json.
step 2 (Rust):    `OBLIV_WRITE_VECTORS=1 cargo test -p obliv-he --test interop -- --ignored write_ours` encrypts values
                  under that key with obliv-he and appends them ("ours") to the file.
step 3 (`decrypt`): python-phe decrypts "ours" and stores its results ("phe_decrypted").

usage: make_phe_vectors.py phe | make_phe_vectors.py decrypt
"""
import json, struct, sys
from phe import paillier
from phe.encoding import EncodedNumber

PATH = __file__.rsplit("/", 1)[0] + "/phe_interop.json"

def bits(x):
    return str(struct.unpack("<Q", struct.pack("<d", x))[0])

def step_phe():
    pk, sk = paillier.generate_paillier_keypair(n_length=2048)
    ints = [0, 1, -1, 42, -123456789, 2**62, -(2**63), 2**200 + 12345, -(2**300)]
    floats = [0.0, 1.5, -2.25, 3.141592653589793, -1e-7, 6.02214076e23, 1e-300, -12345.678]
    out = {
        "source": "python-phe 1.5.0 (PyPI phe), crates/he/tests/vectors/make_phe_vectors.py",
        "n": format(pk.n, "x"), "p": format(sk.p, "x"), "q": format(sk.q, "x"),
        "phe_ints": [], "phe_floats": [], "ours": [],
    }
    for v in ints:
        c = pk.encrypt(v)
        out["phe_ints"].append({"value": str(v), "ciphertext": format(c.ciphertext(), "x"),
                                "exponent": c.exponent})
    for x in floats:
        e = EncodedNumber.encode(pk, x)
        c = pk.encrypt(x)
        assert c.exponent == e.exponent
        out["phe_floats"].append({"float_bits": bits(x), "encoding": format(e.encoding, "x"),
                                  "exponent": e.exponent, "ciphertext": format(c.ciphertext(), "x"),
                                  "decoded_bits": bits(float(sk.decrypt(c)))})
    # Encodings with a precision (python-phe's EncodedNumber.encode(pk, x, precision=...)).
    out["phe_precision"] = []
    for x, prec in [(0.1, 1e-3), (-2.5, 1e-6), (1234.5678, 0.01), (7.0, 1.0)]:
        e = EncodedNumber.encode(pk, x, precision=prec)
        out["phe_precision"].append({"float_bits": bits(x), "precision_bits": bits(prec),
                                     "encoding": format(e.encoding, "x"), "exponent": e.exponent})
    json.dump(out, open(PATH, "w"), indent=1)

def step_decrypt():
    d = json.load(open(PATH))
    pk = paillier.PaillierPublicKey(int(d["n"], 16))
    sk = paillier.PaillierPrivateKey(pk, int(d["p"], 16), int(d["q"], 16))
    for o in d["ours"]:
        c = paillier.EncryptedNumber(pk, int(o["ciphertext"], 16), o["exponent"])
        v = sk.decrypt(c)
        o["phe_decrypted"] = bits(float(v)) if o["kind"] == "float" else str(v)
    json.dump(d, open(PATH, "w"), indent=1)

if __name__ == "__main__":
    {"phe": step_phe, "decrypt": step_decrypt}[sys.argv[1]]()
