// SPDX-License-Identifier: GPL-2.0
/* rx-oracle live probe: interprets a scenario's XDP op list (PROTOCOL.md) per packet.
 *
 * The op list of packet N of a batch sits in `progs[N % RXO_MAX_PKTS]`; `seqmap[0]` counts
 * packets since the batch started.  Each packet produces one ring buffer record: every op's
 * rc and outputs, the action, and the bytes/lengths after the program.  Each metadata
 * kfunc is called twice with different sentinels in its outputs so user space can tell
 * an output the driver wrote from one it left alone (KFUNC-API-005).
 *
 * RXO_GUEST builds the variant a guest loads with bpftool (conformance/live/qemu_fec):
 * UAPI headers instead of a vmlinux.h (the guest's kernel is not the host's), records in
 * an array map whose values carry no BTF type (bpftool prints them as plain bytes), the
 * probe program alone, and capture sizes given on the command line.  RXO_NO_KFUNCS leaves
 * the metadata kfuncs out: a program calling one cannot load on a kernel without BTF
 * (Debian's armhf kernels have none).  RXO_NO_ADJ_HEAD, _ADJ_META, _ADJ_TAIL, _K_TS,
 * _K_HASH and _K_VLAN each leave out one op kind the running kernel refuses
 * (conformance/live/ops.py finds them); an op left out records rc 0 and does nothing,
 * and the host never sends a scenario that calls it.
 *
 * The guest variant also carries the host's control channel (the emulated serial console
 * loses input, see conformance/live/qemu_fec/guest.py): frames of EtherType RXO_CTL_PROTO
 * are not scenario frames.  The XDP probe passes them on without counting them, and
 * rxo_ctl, attached at tcx ingress (so it sees them with or without an XDP program),
 * copies their payload into `progs` (a packet's op list) or `ctrl` (the command the
 * guest's shell polls for) and drops them.
 */
#ifdef RXO_GUEST
#include <linux/bpf.h>
#include <linux/types.h>
enum xdp_rss_hash_type { XDP_RSS_TYPE_NONE = 0 };
#else
#include "vmlinux.h"
#endif
#include <bpf/bpf_helpers.h>

#define RXO_MAX_OPS 16
#ifndef RXO_MAX_PKTS
#define RXO_MAX_PKTS 1024
#endif
#ifndef RXO_DATA_CAP
#define RXO_DATA_CAP 3584
#endif
#ifndef RXO_META_CAP
#define RXO_META_CAP 256
#endif

enum {
	RXO_OP_END = 0, RXO_OP_ADJ_HEAD, RXO_OP_ADJ_META, RXO_OP_ADJ_TAIL, RXO_OP_WRITE,
	RXO_OP_GET_LEN, RXO_OP_K_TS, RXO_OP_K_HASH, RXO_OP_K_VLAN, RXO_OP_RETURN,
};

struct rxo_op {
	__u32 kind;
	__s32 arg;
	__s32 off;
	__u32 len;
	__u8 data[8];
};

struct rxo_prog {
	__u32 n;
	__u32 pad;
	struct rxo_op ops[RXO_MAX_OPS];
};

struct rxo_oprec {
	__s32 rc;
	__s32 rc2;
	__u64 a1, a2, b1, b2;
};

struct rxo_rec {
	__u32 seq, nrec, action, data_len, meta_len, buff_len, cap_len, pad;
	struct rxo_oprec ops[RXO_MAX_OPS];
	__u8 meta[RXO_META_CAP];
	__u8 data[RXO_DATA_CAP];
};

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, RXO_MAX_PKTS);
	__type(key, __u32);
	__type(value, struct rxo_prog);
} progs SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u32);
} seqmap SEC(".maps");

#ifdef RXO_GUEST
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, RXO_MAX_PKTS);
	__uint(key_size, sizeof(__u32));
	__uint(value_size, sizeof(struct rxo_rec));
} records SEC(".maps");

/* IEEE 802 "local experimental" EtherType 1; control frames go between the run's MACs. */
#define RXO_CTL_PROTO 0x88b5
#define RXO_CTL_MAGIC 0x43584f52 /* "ROXC" read as a little-endian u32 */
#define RXO_ETH_HLEN 14

enum { RXO_CTL_PROG = 1, RXO_CTL_CMD = 2 };

/* After the Ethernet header: this head, then a struct rxo_prog (PROG: packet `index`'s
 * op list) or a struct rxo_cmd (CMD).  All little-endian, as the guest is. */
struct rxo_ctl_head {
	__u32 magic, kind, index, pad;
};

/* What the guest's shell does next (init.sh reads it with bpftool): a new `seq` is a new
 * command; `op`, frame count, the configuration the scenario runs under, and how many
 * 16-byte lines of each record the dump prints (what the longest op list fills). */
struct rxo_cmd {
	__u32 seq, op, nframes, xdp, rx_csum, vlan_rx, record_lines, pad;
};

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__uint(key_size, sizeof(__u32));
	__uint(value_size, sizeof(struct rxo_cmd));
} ctrl SEC(".maps");
#else
struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 8 << 20);
} events SEC(".maps");
#endif

#if !defined(RXO_NO_KFUNCS) && !defined(RXO_NO_K_TS)
extern int bpf_xdp_metadata_rx_timestamp(const struct xdp_md *ctx, __u64 *timestamp) __ksym;
#endif
#if !defined(RXO_NO_KFUNCS) && !defined(RXO_NO_K_HASH)
extern int bpf_xdp_metadata_rx_hash(const struct xdp_md *ctx, __u32 *hash,
				    enum xdp_rss_hash_type *rss_type) __ksym;
#endif
#if !defined(RXO_NO_KFUNCS) && !defined(RXO_NO_K_VLAN)
extern int bpf_xdp_metadata_rx_vlan_tag(const struct xdp_md *ctx, __be16 *vlan_proto,
					__u16 *vlan_tci) __ksym;
#endif

static __always_inline int rxo_write(struct xdp_md *ctx, struct rxo_op *op)
{
	void *data = (void *)(long)ctx->data;
	void *end = (void *)(long)ctx->data_end;
	void *meta = (void *)(long)ctx->data_meta;
	long mlen = data - meta, dlen = end - data;
	long off = op->off;
	__u32 len = op->len;
	int j;

	if (mlen < 0)
		mlen = 0; /* no metadata support: data_meta = data + 1 */
	if (len > 8)
		len = 8;
	if (off < -mlen || off + (long)len > dlen)
		return -34; /* -ERANGE: a verified program skips the store */
	for (j = 0; j < 8; j++) {
		long pos = off + j;

		if (j >= len)
			break;
		if (pos < 0) {
			long idx = mlen + pos;
			__u8 *q;

			__u64 i8;

			if (idx < 0 || idx > 255)
				break;
			i8 = idx & 0xff;
			asm volatile("" : "+r"(i8));
			q = meta + i8;
			if ((void *)(q + 1) > data)
				break;
			*q = op->data[j];
		} else {
			__u8 *q;

			__u64 p12;

			if (pos > 4095)
				break;
			p12 = pos & 0xfff;
			asm volatile("" : "+r"(p12));
			q = data + p12;
			if ((void *)(q + 1) > end)
				break;
			*q = op->data[j];
		}
	}
	return 0;
}

SEC("xdp")
int rxo_probe(struct xdp_md *ctx)
{
	__u32 zero = 0, slot, seq, action = XDP_PASS, nrec = 0, cap;
	struct rxo_prog *p;
	struct rxo_rec *r;
	__u32 *seqp;
	void *data, *end, *meta;
	int i, j;

#ifdef RXO_GUEST
	data = (void *)(long)ctx->data;
	end = (void *)(long)ctx->data_end;
	if (data + RXO_ETH_HLEN + 4 <= end &&
	    *(__u16 *)(data + 12) == __builtin_bswap16(RXO_CTL_PROTO) &&
	    *(__u32 *)(data + RXO_ETH_HLEN) == RXO_CTL_MAGIC)
		return XDP_PASS; /* a control frame: rxo_ctl takes it at tcx ingress */
#endif
	seqp = bpf_map_lookup_elem(&seqmap, &zero);
	if (!seqp)
		return XDP_PASS;
	seq = *seqp; /* one RX queue, one NAPI context: no race */
	*seqp = seq + 1;
	slot = seq % RXO_MAX_PKTS;
	p = bpf_map_lookup_elem(&progs, &slot);
	if (!p)
		return XDP_PASS;
#ifdef RXO_GUEST
	r = bpf_map_lookup_elem(&records, &slot);
#else
	r = bpf_ringbuf_reserve(&events, sizeof(*r), 0);
#endif
	if (!r)
		return XDP_PASS;
	r->seq = seq;
#ifdef RXO_GUEST
	/* The length the program was given: the host matches records to frames by it, as
	 * a frame the driver drops as an error never reaches the program. */
	r->pad = (long)ctx->data_end - (long)ctx->data;
#endif

	for (i = 0; i < RXO_MAX_OPS; i++) {
		struct rxo_op *op = &p->ops[i];
		struct rxo_oprec *o = &r->ops[i];

		if (i >= p->n)
			break;
		if (op->kind == RXO_OP_RETURN) {
			action = (__u32)op->arg;
			break;
		}
		o->rc = 0;
		o->rc2 = 0;
		o->a1 = o->a2 = o->b1 = o->b2 = 0;
		switch (op->kind) {
#ifndef RXO_NO_ADJ_HEAD
		case RXO_OP_ADJ_HEAD:
			o->rc = bpf_xdp_adjust_head(ctx, op->arg);
			break;
#endif
#ifndef RXO_NO_ADJ_META
		case RXO_OP_ADJ_META:
			o->rc = bpf_xdp_adjust_meta(ctx, op->arg);
			break;
#endif
#ifndef RXO_NO_ADJ_TAIL
		case RXO_OP_ADJ_TAIL:
			o->rc = bpf_xdp_adjust_tail(ctx, op->arg);
			break;
#endif
		case RXO_OP_WRITE:
			o->rc = rxo_write(ctx, op);
			break;
		case RXO_OP_GET_LEN:
			o->a1 = bpf_xdp_get_buff_len(ctx);
			break;
#if !defined(RXO_NO_KFUNCS) && !defined(RXO_NO_K_TS)
		case RXO_OP_K_TS: {
			__u64 t = 0x5a5a5a5a5a5a5a5aULL;

			o->rc = bpf_xdp_metadata_rx_timestamp(ctx, &t);
			o->a1 = t;
			t = 0xa5a5a5a5a5a5a5a5ULL;
			o->rc2 = bpf_xdp_metadata_rx_timestamp(ctx, &t);
			o->b1 = t;
			break;
		}
#endif
#if !defined(RXO_NO_KFUNCS) && !defined(RXO_NO_K_HASH)
		case RXO_OP_K_HASH: {
			__u32 h = 0x5a5a5a5a;
			enum xdp_rss_hash_type ty = 0x5a5a5a5a;

			o->rc = bpf_xdp_metadata_rx_hash(ctx, &h, &ty);
			o->a1 = h;
			o->a2 = ty;
			h = 0xa5a5a5a5;
			ty = 0xa5a5a5a5;
			o->rc2 = bpf_xdp_metadata_rx_hash(ctx, &h, &ty);
			o->b1 = h;
			o->b2 = ty;
			break;
		}
#endif
#if !defined(RXO_NO_KFUNCS) && !defined(RXO_NO_K_VLAN)
		case RXO_OP_K_VLAN: {
			__be16 pr = 0x5a5a;
			__u16 tci = 0x5a5a;

			o->rc = bpf_xdp_metadata_rx_vlan_tag(ctx, &pr, &tci);
			o->a1 = pr;
			o->a2 = tci;
			pr = 0xa5a5;
			tci = 0xa5a5;
			o->rc2 = bpf_xdp_metadata_rx_vlan_tag(ctx, &pr, &tci);
			o->b1 = pr;
			o->b2 = tci;
			break;
		}
#endif
		default:
			break;
		}
		nrec = i + 1;
	}

	data = (void *)(long)ctx->data;
	end = (void *)(long)ctx->data_end;
	meta = (void *)(long)ctx->data_meta;
	r->data_len = end - data;
	r->meta_len = data - meta;
	r->buff_len = bpf_xdp_get_buff_len(ctx);
	for (j = 0; j < RXO_META_CAP; j++) {
		__u8 *q = meta + j;

		if ((void *)(q + 1) > data)
			break;
		r->meta[j] = *q;
	}
	cap = r->buff_len;
	if (cap > RXO_DATA_CAP)
		cap = RXO_DATA_CAP;
	r->cap_len = 0;
	if (cap > 0 && cap <= RXO_DATA_CAP) {
		if (bpf_xdp_load_bytes(ctx, 0, r->data, cap) == 0)
			r->cap_len = cap;
	}
	r->action = action;
	r->nrec = nrec;
#ifndef RXO_GUEST
	bpf_ringbuf_submit(r, 0);
#endif
	return action;
}

#ifdef RXO_GUEST

/* The control channel's receiver (tcx ingress of the guest's eth0).  It drops every frame
 * (2 is TCX_DROP): scenario frames the driver hands to the stack end here, so no protocol
 * answers them and the stack counts no drops of its own into rx_dropped (dev_get_stats
 * adds those to the driver's; sch_handle_ingress frees a dropped skb without counting). */
SEC("tc")
int rxo_ctl(struct __sk_buff *skb)
{
	struct rxo_ctl_head h;
	__u32 zero = 0, slot;
	struct rxo_prog *p;
	struct rxo_cmd *c;

	if (skb->protocol != __builtin_bswap16(RXO_CTL_PROTO))
		return 2;
	if (bpf_skb_load_bytes(skb, RXO_ETH_HLEN, &h, sizeof(h)) || h.magic != RXO_CTL_MAGIC)
		return 2;
	if (h.kind == RXO_CTL_PROG) {
		slot = h.index;
		if (slot >= RXO_MAX_PKTS)
			return 2;
		p = bpf_map_lookup_elem(&progs, &slot);
		if (p)
			bpf_skb_load_bytes(skb, RXO_ETH_HLEN + sizeof(h), p, sizeof(*p));
	} else if (h.kind == RXO_CTL_CMD) {
		c = bpf_map_lookup_elem(&ctrl, &zero);
		if (c)
			bpf_skb_load_bytes(skb, RXO_ETH_HLEN + sizeof(h), c, sizeof(*c));
	}
	return 2;
}

#else

/* The peer end's program: drop whatever comes back (XDP_TX of the probed end), which
 * also keeps the peer's NAPI running so XDP_TX can reach it. */
SEC("xdp")
int rxo_peer(struct xdp_md *ctx)
{
	return XDP_DROP;
}

/* Out-of-band VLAN tag for the sending end's egress (tc clsact): while `on`, every frame
 * leaves with a hw-accel tag, as if the stack had pushed it on a device with txvlan. */
struct rxo_vlan_cfg {
	__u32 on;
	__u16 proto;
	__u16 tci;
};

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct rxo_vlan_cfg);
} vlancfg SEC(".maps");

SEC("tc")
int rxo_vlan(struct __sk_buff *skb)
{
	__u32 zero = 0;
	struct rxo_vlan_cfg *c = bpf_map_lookup_elem(&vlancfg, &zero);

	if (c && c->on)
		bpf_skb_vlan_push(skb, __builtin_bswap16(c->proto), c->tci);
	return 0; /* TC_ACT_OK */
}

/* Sends every frame back to the pair's other end: the frames then reach that end's
 * program as xdp_frames through ndo_xdp_xmit (the veth xdp_frame path). */
SEC("xdp")
int rxo_bounce(struct xdp_md *ctx)
{
	return XDP_TX;
}

#endif /* RXO_GUEST */

char LICENSE[] SEC("license") = "GPL";
