// SPDX-License-Identifier: GPL-2.0
/* rx-oracle: one tiny XDP program per op kind of the probe (conformance/live/ops.py).
 *
 * Built once per op kind with -DRXO_TRY=<n> (one of the RXO_TRY_* numbers below), so a
 * kernel that refuses one helper or kfunc refuses that object alone: the verifier's
 * answer then names exactly what the probe cannot call on this kernel, and the probe is
 * rebuilt without it.  Each program calls its helper or kfunc once and passes the frame.
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>

/* The op kinds (conformance/live/ops.py numbers them the same way). */
#define RXO_TRY_ADJ_HEAD 1
#define RXO_TRY_ADJ_META 2
#define RXO_TRY_ADJ_TAIL 3
#define RXO_TRY_K_TS 4
#define RXO_TRY_K_HASH 5
#define RXO_TRY_K_VLAN 6
#define RXO_TRY_RECORD 7

#if RXO_TRY == RXO_TRY_K_TS
extern int bpf_xdp_metadata_rx_timestamp(const struct xdp_md *ctx, __u64 *timestamp) __ksym;
#elif RXO_TRY == RXO_TRY_K_HASH
extern int bpf_xdp_metadata_rx_hash(const struct xdp_md *ctx, __u32 *hash,
				    enum xdp_rss_hash_type *rss_type) __ksym;
#elif RXO_TRY == RXO_TRY_K_VLAN
extern int bpf_xdp_metadata_rx_vlan_tag(const struct xdp_md *ctx, __be16 *vlan_proto,
					__u16 *vlan_tci) __ksym;
#elif RXO_TRY == RXO_TRY_RECORD
struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 4096);
} rxo_try_ring SEC(".maps");
#endif

SEC("xdp")
int rxo_try(struct xdp_md *ctx)
{
	long rc = 0;

#if RXO_TRY == RXO_TRY_ADJ_HEAD
	rc = bpf_xdp_adjust_head(ctx, 0);
#elif RXO_TRY == RXO_TRY_ADJ_META
	rc = bpf_xdp_adjust_meta(ctx, 0);
#elif RXO_TRY == RXO_TRY_ADJ_TAIL
	rc = bpf_xdp_adjust_tail(ctx, 0);
#elif RXO_TRY == RXO_TRY_K_TS
	__u64 t = 0;

	rc = bpf_xdp_metadata_rx_timestamp(ctx, &t);
#elif RXO_TRY == RXO_TRY_K_HASH
	__u32 h = 0;
	enum xdp_rss_hash_type ty = 0;

	rc = bpf_xdp_metadata_rx_hash(ctx, &h, &ty);
#elif RXO_TRY == RXO_TRY_K_VLAN
	__be16 pr = 0;
	__u16 tci = 0;

	rc = bpf_xdp_metadata_rx_vlan_tag(ctx, &pr, &tci);
#elif RXO_TRY == RXO_TRY_RECORD
	/* What every probe record needs, whatever the op list: a ring buffer record, the
	 * buffer's length and a copy of its bytes. */
	__u8 *r = bpf_ringbuf_reserve(&rxo_try_ring, 64, 0);

	if (!r)
		return XDP_PASS;
	rc = bpf_xdp_get_buff_len(ctx);
	if (bpf_xdp_load_bytes(ctx, 0, r, 14))
		rc = 0;
	bpf_ringbuf_submit(r, 0);
#else
#error "RXO_TRY names no op kind"
#endif
	return rc == 0x7fffffff ? XDP_DROP : XDP_PASS;
}

char LICENSE[] SEC("license") = "GPL";
