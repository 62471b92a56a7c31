"""A file's hash as divergence records it (queries.file_hash): SHA-256 of its bytes, whichever
implementation computed it — Python's own for a small file (no OpenSSL loaded by a hook, issue 30),
hashlib's for a large one."""

import hashlib
import subprocess
import sys

from agents_room.queries import OWN_SHA256_MAX, file_hash


def test_small_and_large_files_hash_as_hashlib_does(tmp_path):
    for size in (0, 1, OWN_SHA256_MAX, OWN_SHA256_MAX + 1, 3 * OWN_SHA256_MAX):
        f = tmp_path / f"f{size}"
        data = bytes(i % 251 for i in range(size))
        f.write_bytes(data)
        assert file_hash(str(f)) == "sha256:" + hashlib.sha256(data).hexdigest()
    assert file_hash(str(tmp_path / "missing")) is None
    assert file_hash(str(tmp_path)) is None  # a folder: nothing read


def test_a_small_file_is_hashed_without_openssl(tmp_path):
    f = tmp_path / "a.py"
    f.write_text("x = 1\n")
    code = ("import sys; from agents_room.queries import file_hash; h = file_hash(sys.argv[1]); "
            "print(h, sorted({'hashlib', '_hashlib'} & set(sys.modules)))")
    out = subprocess.run([sys.executable, "-c", code, str(f)], capture_output=True, text=True, timeout=60)
    assert out.stdout.split() == ["sha256:" + hashlib.sha256(b"x = 1\n").hexdigest(), "[]"], out.stderr
