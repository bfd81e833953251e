"""The mlx5 CQE layouts of reference/mlx5/cqe.py against C headers compiled with gcc
(SPEC: MLX5-CQE-001, MLX5-CQE-003, MLX5-CQE-006, MLX5-CQE-007, MLX5-CQE-009).

Independent reference 1, run in CI: rdma-core's ``<infiniband/mlx5dv.h>`` (Debian package
``libibverbs-dev``, which ``.ci/run`` installs).  A small C program prints ``offsetof`` and
``sizeof`` of ``struct mlx5_cqe64`` and ``struct mlx5_err_cqe`` members, the header's
opcode, syndrome and validity constants, and the bytes of a CQE and an error CQE built with
the header's own field names and ``<endian.h>`` byte-order helpers.  The model must place
the same values at the same bytes.  rdma-core names the user-space view of the completion:
where the kernel has fields rdma-core keeps reserved (``rsvd4`` holds the kernel's LRO
union, ``rss_hash_result`` and ``rss_hash_type``; ``rsvd20`` holds the kernel's
``rsvd20`` and ``check_sum``), the test checks only that the model's fields lie inside
that reserved span; rdma-core's ``timestamp`` is one ``__be64`` where the kernel has
``timestamp_h`` / ``timestamp_l``.

Independent reference 2, run where a kernel tree is on the machine (``/work/ksrc/*`` or
``$RX_ORACLE_KSRC``; skipped in CI): the kernel's own ``struct mlx5_cqe64``,
``struct mlx5_err_cqe``, ``struct mlx5_mini_cqe8`` and ``struct mpwrq_cqe_bc`` are cut out
of ``include/linux/mlx5/device.h`` at test time (never copied into this repository),
compiled with ``u8``/``__be16``/``__be32`` typedefs, and every member's offset, union
views included, is compared with the model.
"""

from __future__ import annotations

import os
import re
import shutil
import struct
import subprocess
from pathlib import Path

import attrs
import pytest

from reference.mlx5 import cqe as C

GCC = shutil.which("gcc")
pytestmark = pytest.mark.skipif(GCC is None, reason="gcc is not installed (CI installs it)")


def _compile_and_run(source: str, tmp_path: Path, *extra: str) -> str | None:
    """Build and run ``source``; None when the header it includes is missing."""
    c_file, exe = tmp_path / "probe.c", tmp_path / "probe"
    c_file.write_text(source)
    assert GCC is not None
    build = subprocess.run([GCC, "-std=gnu11", "-Wall", "-Werror", *extra, "-o", str(exe),
                            str(c_file)], capture_output=True, text=True, check=False)
    if build.returncode != 0:
        if "No such file or directory" in build.stderr:
            return None
        raise AssertionError(f"the probe did not compile:\n{build.stderr}")
    return subprocess.run([str(exe)], capture_output=True, text=True, check=True).stdout


def _parse(out: str) -> dict[str, str]:
    return dict(line.split(" ", 1) for line in out.splitlines() if line)


def _model_layout(cls: type) -> dict[str, tuple[int, int]]:
    """(offset, size) of every stored field of a model class, from its struct format."""
    layout: struct.Struct = cls.LAYOUT  # type: ignore[attr-defined]
    codes = re.findall(r"(\d*)([a-zA-Z])", layout.format.lstrip("<>!=@"))
    names = [a.name for a in attrs.fields(cls)]
    assert len(codes) == len(names)
    out, offset = {}, 0
    for name, (count, code) in zip(names, codes, strict=True):
        size = struct.calcsize(f">{count}{code}")
        out[name] = (offset, size)
        offset += size
    return out


# --- reference 1: rdma-core <infiniband/mlx5dv.h> --------------------------------------

#: rdma-core member -> the model field at the same bytes (same width).
SAME_FIELD = {
    "wqe_id": "wqe_id", "ml_path": "ml_path", "slid": "slid", "flags_rqpn": "flags_rqpn",
    "hds_ip_ext": "hds_ip_ext", "l4_hdr_type_etc": "l4_l3_hdr_type",
    "vlan_info": "vlan_info", "srqn_uidx": "srqn", "imm_inval_pkey": "ft_metadata",
    "byte_cnt": "byte_cnt", "sop_drop_qpn": "sop_drop_qpn", "wqe_counter": "wqe_counter",
    "signature": "signature", "op_own": "op_own",
}
#: rdma-core members (reserved or merged there) -> the model fields they must contain.
CONTAINS = {
    "rsvd0": ("tls_outer_l3_tunneled", "rsvd0"),
    "rsvd4": ("tcppsh_abort_dupack", "min_ttl", "tcp_win", "ack_seq_num",
              "rss_hash_result", "rss_hash_type"),
    "rsvd20": ("rsvd20", "check_sum"),
    "timestamp": ("timestamp_h", "timestamp_l"),
}
APP = ("app", "app_op", "app_info")  # the kernel's rsvd40[4]
ERR_FIELDS = ("rsvd0", "srqn", "rsvd1", "vendor_err_synd", "syndrome", "s_wqe_opcode_qpn",
              "wqe_counter", "signature", "op_own")
CONSTANTS = (
    "MLX5_CQE_OWNER_MASK", "MLX5_CQE_REQ", "MLX5_CQE_RESP_WR_IMM", "MLX5_CQE_RESP_SEND",
    "MLX5_CQE_RESP_SEND_IMM", "MLX5_CQE_RESP_SEND_INV", "MLX5_CQE_RESIZE_CQ",
    "MLX5_CQE_NO_PACKET", "MLX5_CQE_SIG_ERR", "MLX5_CQE_REQ_ERR", "MLX5_CQE_RESP_ERR",
    "MLX5_CQE_INVALID",
    "MLX5_CQE_SYNDROME_LOCAL_LENGTH_ERR", "MLX5_CQE_SYNDROME_LOCAL_QP_OP_ERR",
    "MLX5_CQE_SYNDROME_LOCAL_PROT_ERR", "MLX5_CQE_SYNDROME_WR_FLUSH_ERR",
    "MLX5_CQE_SYNDROME_MW_BIND_ERR", "MLX5_CQE_SYNDROME_BAD_RESP_ERR",
    "MLX5_CQE_SYNDROME_LOCAL_ACCESS_ERR", "MLX5_CQE_SYNDROME_REMOTE_INVAL_REQ_ERR",
    "MLX5_CQE_SYNDROME_REMOTE_ACCESS_ERR", "MLX5_CQE_SYNDROME_REMOTE_OP_ERR",
    "MLX5_CQE_SYNDROME_TRANSPORT_RETRY_EXC_ERR", "MLX5_CQE_SYNDROME_RNR_RETRY_EXC_ERR",
    "MLX5_CQE_SYNDROME_REMOTE_ABORTED_ERR",
    "MLX5_CQE_L2_OK", "MLX5_CQE_L3_OK", "MLX5_CQE_L4_OK",
    "MLX5_CQE_L3_HDR_TYPE_IPV6", "MLX5_CQE_L3_HDR_TYPE_IPV4",
)
#: rdma-core constant -> the model's name where it differs (the kernel's name).
MODEL_NAME = {
    "MLX5_CQE_NO_PACKET": "RDMA_CORE_MLX5_CQE_NO_PACKET",
    "MLX5_CQE_L2_OK": "CQE_L2_OK", "MLX5_CQE_L3_OK": "CQE_L3_OK", "MLX5_CQE_L4_OK": "CQE_L4_OK",
    "MLX5_CQE_L3_HDR_TYPE_IPV6": "MLX5_CQE_ROCE_L3_HEADER_TYPE_IPV6",
    "MLX5_CQE_L3_HDR_TYPE_IPV4": "MLX5_CQE_ROCE_L3_HEADER_TYPE_IPV4",
}

#: The distinctive CQE, once as C assignments with rdma-core's names and once as the model.
C_CQE = """
    c.wqe_id = htobe16(0x1234); c.ml_path = 0x80; c.slid = htobe16(0x5678);
    c.flags_rqpn = htobe32(0x9abcdef0); c.hds_ip_ext = MLX5_CQE_L3_OK | MLX5_CQE_L4_OK;
    c.l4_hdr_type_etc = (0x4 << 4) | (MLX5_CQE_L3_HDR_TYPE_IPV4 << 2) | 0x1;
    c.vlan_info = htobe16(0xe00a); c.srqn_uidx = htobe32(0x05000123);
    c.imm_inval_pkey = htobe32(0xcafef00d); c.app = 0x11; c.app_op = 0x22;
    c.app_info = htobe16(0x3344); c.byte_cnt = htobe32(0x05ea);
    c.timestamp = htobe64(0x0102030405060708ULL); c.sop_drop_qpn = htobe32(0x00abcdef);
    c.wqe_counter = htobe16(0x0fed); c.signature = 0x5a;
    c.op_own = MLX5_CQE_RESP_SEND << 4; mlx5dv_set_cqe_owner(&c, 1);
"""
MODEL_CQE = C.mlx5_cqe64(
    wqe_id=0x1234, ml_path=0x80, slid=0x5678, flags_rqpn=0x9ABCDEF0,
    hds_ip_ext=C.CQE_L3_OK | C.CQE_L4_OK,
    l4_l3_hdr_type=(C.CQE_L4_HDR_TYPE_TCP_ACK_AND_DATA << 4)
    | (C.MLX5_CQE_ROCE_L3_HEADER_TYPE_IPV4 << 2) | 0x1,
    vlan_info=0xE00A, srqn=0x05000123, ft_metadata=0xCAFEF00D, rsvd40=b"\x11\x22\x33\x44",
    byte_cnt=0x05EA, timestamp_h=0x01020304, timestamp_l=0x05060708, sop_drop_qpn=0x00ABCDEF,
    wqe_counter=0x0FED, signature=0x5A, op_own=(C.MLX5_CQE_RESP_SEND << 4) | 1,
)
C_ERR = """
    e.srqn = htobe32(0x42); e.vendor_err_synd = MLX5_CQE_VENDOR_SYNDROME_ODP_PFAULT;
    e.syndrome = MLX5_CQE_SYNDROME_LOCAL_LENGTH_ERR; e.s_wqe_opcode_qpn = htobe32(0x0a000123);
    e.wqe_counter = htobe16(0x0102); e.signature = 0x33; e.op_own = (MLX5_CQE_RESP_ERR << 4) | 1;
"""
MODEL_ERR = C.mlx5_err_cqe(srqn=0x42, vendor_err_synd=0x93,
                           syndrome=C.MLX5_CQE_SYNDROME_LOCAL_LENGTH_ERR,
                           s_wqe_opcode_qpn=0x0A000123, wqe_counter=0x0102, signature=0x33,
                           op_own=(C.MLX5_CQE_RESP_ERR << 4) | 1)


def _rdma_core_program() -> str:
    lines = ['#include <endian.h>', '#include <stddef.h>', '#include <stdio.h>',
             '#include <string.h>', '#include <infiniband/mlx5dv.h>', '',
             'static void hex(const char *k, const void *p, size_t n) {',
             '    const unsigned char *b = p; printf("%s ", k);',
             '    for (size_t i = 0; i < n; i++) printf("%02x", b[i]);',
             '    printf("\\n");', '}', '', 'int main(void) {',
             '    struct mlx5_cqe64 c; struct mlx5_err_cqe e;',
             '    memset(&c, 0, sizeof(c)); memset(&e, 0, sizeof(e));',
             '    printf("sizeof.cqe64 %zu\\n", sizeof(struct mlx5_cqe64));',
             '    printf("sizeof.err_cqe %zu\\n", sizeof(struct mlx5_err_cqe));']
    for m in (*SAME_FIELD, *CONTAINS, *APP):
        lines.append(f'    printf("cqe64.{m} %zu %zu\\n", offsetof(struct mlx5_cqe64, {m}),'
                     f' sizeof(c.{m}));')
    for m in ERR_FIELDS:
        lines.append(f'    printf("err.{m} %zu %zu\\n", offsetof(struct mlx5_err_cqe, {m}),'
                     f' sizeof(e.{m}));')
    for k in CONSTANTS:
        lines.append(f'    printf("const.{k} %d\\n", (int){k});')
    lines += [C_CQE, '    hex("bytes.cqe64", &c, sizeof(c));',
              '    printf("get.opcode %d\\n", mlx5dv_get_cqe_opcode(&c));',
              '    printf("get.owner %d\\n", mlx5dv_get_cqe_owner(&c));',
              '    printf("get.format %d\\n", mlx5dv_get_cqe_format(&c));',
              '    printf("get.timestamp %llu\\n", (unsigned long long)be64toh(c.timestamp));',
              C_ERR, '    hex("bytes.err", &e, sizeof(e));', '    return 0;', '}']
    return "\n".join(lines) + "\n"


@pytest.fixture(scope="module")
def rdma_core(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    out = _compile_and_run(_rdma_core_program(), tmp_path_factory.mktemp("mlx5dv"))
    if out is None:
        pytest.skip("<infiniband/mlx5dv.h> is missing (Debian libibverbs-dev; CI installs it)")
    return _parse(out)


def _off_size(value: str) -> tuple[int, int]:
    off, size = value.split()
    return int(off), int(size)


@pytest.mark.rule("MLX5-CQE-001")
def test_cqe64_members_sit_where_rdma_core_puts_them(rdma_core: dict[str, str]) -> None:
    model = _model_layout(C.mlx5_cqe64)
    assert int(rdma_core["sizeof.cqe64"]) == C.CQE_SIZE == C.mlx5_cqe64.LAYOUT.size
    for theirs, ours in SAME_FIELD.items():
        assert _off_size(rdma_core[f"cqe64.{theirs}"]) == model[ours], theirs
    for theirs, inside in CONTAINS.items():
        start, size = _off_size(rdma_core[f"cqe64.{theirs}"])
        spans = [model[f] for f in inside]
        assert spans[0][0] == start, theirs
        assert sum(s for _, s in spans) == size, theirs  # contiguous, nothing left over
    app = [_off_size(rdma_core[f"cqe64.{m}"]) for m in APP]
    assert (app[0][0], sum(s for _, s in app)) == model["rsvd40"]


@pytest.mark.rule("MLX5-CQE-001")
def test_err_cqe_members_match_rdma_core(rdma_core: dict[str, str]) -> None:
    model = _model_layout(C.mlx5_err_cqe)
    assert int(rdma_core["sizeof.err_cqe"]) == C.mlx5_err_cqe.LAYOUT.size == 64
    for m in ERR_FIELDS:
        assert _off_size(rdma_core[f"err.{m}"]) == model[m], m


@pytest.mark.rule("MLX5-CQE-001", "MLX5-CQE-003", "MLX5-CQE-006", "MLX5-CQE-007")
def test_a_cqe_built_in_c_packs_and_decodes_the_same(rdma_core: dict[str, str]) -> None:
    c_bytes = bytes.fromhex(rdma_core["bytes.cqe64"])
    assert MODEL_CQE.pack() == c_bytes
    back = C.mlx5_cqe64.unpack(c_bytes)
    assert back == MODEL_CQE
    assert C.get_cqe_opcode(back) == int(rdma_core["get.opcode"]) == C.MLX5_CQE_RESP_SEND
    assert C.cqe_owner(back) == int(rdma_core["get.owner"]) == 1
    assert C.mlx5_get_cqe_format(back) == int(rdma_core["get.format"]) == C.MLX5_NO_INLINE_DATA
    assert C.get_cqe_ts(back) == int(rdma_core["get.timestamp"]) == 0x0102030405060708
    assert C.cqe_has_vlan(back) and C.get_cqe_l4_hdr_type(back) == 4
    assert C.get_cqe_l3_hdr_type(back) == C.MLX5_CQE_ROCE_L3_HEADER_TYPE_IPV4
    assert C.get_cqe_lro_num_seg(back) == 5


@pytest.mark.rule("MLX5-CQE-001", "MLX5-CQE-009")
def test_an_error_cqe_built_in_c_packs_the_same(rdma_core: dict[str, str]) -> None:
    c_bytes = bytes.fromhex(rdma_core["bytes.err"])
    assert MODEL_ERR.pack() == c_bytes
    assert C.mlx5_err_cqe.unpack(c_bytes) == MODEL_ERR
    assert C.MLX5E_RX_ERR_CQE(C.mlx5_cqe64.unpack(c_bytes))


@pytest.mark.rule("MLX5-CQE-003", "MLX5-CQE-006", "MLX5-CQE-009")
def test_constants_agree_with_rdma_core(rdma_core: dict[str, str]) -> None:
    for k in CONSTANTS:
        assert getattr(C, MODEL_NAME.get(k, k)) == int(rdma_core[f"const.{k}"]), k


@pytest.mark.rule("MLX5-CQE-009")
def test_no_packet_is_rdma_cores_name_only(rdma_core: dict[str, str]) -> None:
    # rdma-core names opcode 6; the kernel's enum (include/linux/mlx5/cq.h) does not, so
    # the model keeps no kernel-looking constant for it, and the driver treats it as an
    # error completion like any opcode but RESP_SEND.
    assert int(rdma_core["const.MLX5_CQE_NO_PACKET"]) == 6
    assert not hasattr(C, "MLX5_CQE_NO_PACKET")
    assert C.MLX5E_RX_ERR_CQE(C.mlx5_cqe64(op_own=C.RDMA_CORE_MLX5_CQE_NO_PACKET << 4))


# --- reference 2: the kernel's own structs, cut out of a local tree ---------------------

KERNEL_STRUCTS = ("mlx5_err_cqe", "mlx5_cqe64", "mlx5_mini_cqe8", "mpwrq_cqe_bc")
#: Kernel member expressions (union views included) -> the model's (class, field) bytes.
KERNEL_MEMBERS: dict[str, tuple[str, str]] = {
    **{f: ("mlx5_cqe64", f) for f in (
        "tls_outer_l3_tunneled", "rsvd0", "wqe_id", "rss_hash_result", "rss_hash_type",
        "ml_path", "rsvd20", "check_sum", "slid", "flags_rqpn", "hds_ip_ext",
        "l4_l3_hdr_type", "vlan_info", "srqn", "ft_metadata", "rsvd40", "byte_cnt",
        "timestamp_h", "timestamp_l", "sop_drop_qpn", "wqe_counter", "signature", "op_own")},
    "lro.tcppsh_abort_dupack": ("mlx5_cqe64", "tcppsh_abort_dupack"),
    "lro.min_ttl": ("mlx5_cqe64", "min_ttl"),
    "lro.tcp_win": ("mlx5_cqe64", "tcp_win"),
    "lro.ack_seq_num": ("mlx5_cqe64", "ack_seq_num"),
    "shampo.header_size": ("mlx5_cqe64", "min_ttl"),
    "shampo.header_entry_index": ("mlx5_cqe64", "tcp_win"),
    "shampo.data_offset": ("mlx5_cqe64", "ack_seq_num"),
    "immediate": ("mlx5_cqe64", "ft_metadata"),
    "inval_rkey": ("mlx5_cqe64", "ft_metadata"),
    "pkey": ("mlx5_cqe64", "ft_metadata"),
    "validity_iteration_count": ("mlx5_cqe64", "signature"),
}
KERNEL_ERR_MEMBERS = ERR_FIELDS
KERNEL_MINI_MEMBERS = {"rx_hash_result": (0, 4), "checksum": (0, 2), "stridx": (2, 2),
                       "s_wqe_info.wqe_counter": (0, 2), "s_wqe_info.s_wqe_opcode": (2, 1),
                       "byte_cnt": (4, 4)}


def _kernel_device_h() -> Path | None:
    roots = [os.environ.get("RX_ORACLE_KSRC", ""), "/work/ksrc/7.3", "/work/ksrc/6.12"]
    for root in roots:
        path = Path(root) / "include/linux/mlx5/device.h"
        if root and path.is_file():
            return path
    return None


def _cut_struct(text: str, name: str) -> str:
    start = text.index(f"struct {name} {{")
    end = text.index("\n};", start)
    return text[start : end + 3]


@pytest.mark.rule("MLX5-CQE-001", "MLX5-CQE-004", "MLX5-CQE-008")
def test_model_offsets_match_the_kernels_own_structs(tmp_path: Path) -> None:
    header = _kernel_device_h()
    if header is None:
        pytest.skip("no kernel tree here (/work/ksrc/* or $RX_ORACLE_KSRC); rdma-core's "
                    "header is checked instead")
    text = header.read_text(errors="replace")
    body = "\n".join(_cut_struct(text, s) for s in KERNEL_STRUCTS)
    lines = ["#include <stddef.h>", "#include <stdint.h>", "#include <stdio.h>",
             "typedef uint8_t u8; typedef uint16_t __be16; typedef uint32_t __be32;",
             body, "int main(void) {",
             '    printf("sizeof.cqe64 %zu\\n", sizeof(struct mlx5_cqe64));',
             '    printf("sizeof.mini %zu\\n", sizeof(struct mlx5_mini_cqe8));',
             '    printf("bc.byte_cnt %zu\\n", offsetof(struct mpwrq_cqe_bc, byte_cnt));']
    for member in KERNEL_MEMBERS:
        lines.append(f'    printf("k.{member} %zu %zu\\n", offsetof(struct mlx5_cqe64, {member}),'
                     f' sizeof(((struct mlx5_cqe64 *)0)->{member}));')
    for member in KERNEL_ERR_MEMBERS:
        lines.append(f'    printf("e.{member} %zu %zu\\n", offsetof(struct mlx5_err_cqe, {member}),'
                     f' sizeof(((struct mlx5_err_cqe *)0)->{member}));')
    for member in KERNEL_MINI_MEMBERS:
        lines.append(f'    printf("m.{member} %zu %zu\\n",'
                     f' offsetof(struct mlx5_mini_cqe8, {member}),'
                     f' sizeof(((struct mlx5_mini_cqe8 *)0)->{member}));')
    lines += ["    return 0;", "}"]
    out = _compile_and_run("\n".join(lines) + "\n", tmp_path)
    assert out is not None
    got = _parse(out)
    assert int(got["sizeof.cqe64"]) == 64 and int(got["sizeof.mini"]) == C.MINI_CQE_SIZE
    assert int(got["bc.byte_cnt"]) == 2  # the length is the low be16 (MLX5-CQE-008)
    model = _model_layout(C.mlx5_cqe64)
    for member, (_, field) in KERNEL_MEMBERS.items():
        assert _off_size(got[f"k.{member}"]) == model[field], member
    err = _model_layout(C.mlx5_err_cqe)
    for member in KERNEL_ERR_MEMBERS:
        assert _off_size(got[f"e.{member}"]) == err[member], member
    for member, span in KERNEL_MINI_MEMBERS.items():
        assert _off_size(got[f"m.{member}"]) == span, member
    # The model's split of the mini-CQE's first word (MLX5-CQE-004).
    mini = C.mlx5_mini_cqe8.from_csum(0xBEEF, 0x0102, 0x40)
    raw = mini.pack()
    assert raw[0:2] == b"\xbe\xef" and raw[2:4] == b"\x01\x02" and raw[4:8] == b"\0\0\0\x40"
