// SPDX-License-Identifier: GPL-2.0
/* rx-oracle live cpumap path (conformance/live/cpumap.py).
 *
 * rxo_cm_redir runs native on the receiving veth and redirects every frame into the
 * cpumap entry `cmcfg.to_cpu` of `cpus`, counting the frames it saw.  rxo_cm_verdict is
 * the entry's own program (attach type BPF_XDP_CPUMAP): it notes, by the sequence number
 * the frame carries after its UDP header, that it ran for that frame, and returns
 * `cmcfg.verdict`.  rxo_cm_enq and rxo_cm_kt listen on the xdp_cpumap_enqueue and
 * xdp_cpumap_kthread tracepoints (BTF-typed raw tracepoints: nothing is enabled in
 * tracefs) and put one ring buffer record per batch of the map whose id is
 * `cmcfg.map_id`, so concurrent runs never see each other's batches.
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>

#define RXO_CM_MAX_PKTS 1024
#define RXO_CM_SEQ_OFF 42 /* Ethernet + IPv4 (no options) + UDP */

struct rxo_cm_cfg {
	__u32 to_cpu;
	__u32 verdict;
	__u32 map_id;
	__u32 pad;
};

struct rxo_cm_event {
	__u32 kind; /* 1 enqueue, 2 kthread */
	__s32 map_id;
	__u32 processed;
	__u32 drops;
	__s32 extra; /* to_cpu (enqueue) or sched (kthread) */
	__u32 pass;
	__u32 drop;
	__u32 redirect;
};

struct {
	__uint(type, BPF_MAP_TYPE_CPUMAP);
	__uint(max_entries, 64);
	__type(key, __u32);
	__type(value, struct bpf_cpumap_val);
} cpus SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct rxo_cm_cfg);
} cmcfg SEC(".maps");

/* [0]: frames rxo_cm_redir saw; [1]: frames it could not redirect */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 2);
	__type(key, __u32);
	__type(value, __u64);
} cmcount SEC(".maps");

/* per sequence number: bit 32 set once rxo_cm_verdict ran, the verdict it returned below */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, RXO_CM_MAX_PKTS);
	__type(key, __u32);
	__type(value, __u64);
} cmseen SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 1 << 18);
} cmevents SEC(".maps");

static __always_inline struct rxo_cm_cfg *cfg(void)
{
	__u32 zero = 0;

	return bpf_map_lookup_elem(&cmcfg, &zero);
}

static __always_inline void bump(__u32 idx)
{
	__u64 *v = bpf_map_lookup_elem(&cmcount, &idx);

	if (v)
		__sync_fetch_and_add(v, 1);
}

SEC("xdp")
int rxo_cm_redir(struct xdp_md *ctx)
{
	struct rxo_cm_cfg *c = cfg();
	long act;

	bump(0);
	if (!c)
		return XDP_ABORTED;
	act = bpf_redirect_map(&cpus, c->to_cpu, 0);
	if (act != XDP_REDIRECT)
		bump(1);
	return act;
}

SEC("xdp/cpumap")
int rxo_cm_verdict(struct xdp_md *ctx)
{
	void *data = (void *)(long)ctx->data;
	void *end = (void *)(long)ctx->data_end;
	struct rxo_cm_cfg *c = cfg();
	__u32 verdict = c ? c->verdict : XDP_ABORTED;
	__u32 *seq = data + RXO_CM_SEQ_OFF;
	__u64 mark = (1ULL << 32) | verdict;
	__u32 key;

	if ((void *)(seq + 1) <= end) {
		key = *seq;
		if (key < RXO_CM_MAX_PKTS)
			bpf_map_update_elem(&cmseen, &key, &mark, BPF_ANY);
	}
	return verdict;
}

static __always_inline void emit(__u32 kind, int map_id, __u32 processed, __u32 drops,
				 int extra, __u32 pass, __u32 drop, __u32 redirect)
{
	struct rxo_cm_cfg *c = cfg();
	struct rxo_cm_event *e;

	if (!c || c->map_id == 0 || (__u32)map_id != c->map_id)
		return;
	e = bpf_ringbuf_reserve(&cmevents, sizeof(*e), 0);
	if (!e)
		return;
	e->kind = kind;
	e->map_id = map_id;
	e->processed = processed;
	e->drops = drops;
	e->extra = extra;
	e->pass = pass;
	e->drop = drop;
	e->redirect = redirect;
	bpf_ringbuf_submit(e, 0);
}

SEC("tp_btf/xdp_cpumap_enqueue")
int BPF_PROG(rxo_cm_enq, int map_id, unsigned int processed, unsigned int drops, int to_cpu)
{
	emit(1, map_id, processed, drops, to_cpu, 0, 0, 0);
	return 0;
}

SEC("tp_btf/xdp_cpumap_kthread")
int BPF_PROG(rxo_cm_kt, int map_id, unsigned int processed, unsigned int drops, int sched,
	     struct xdp_cpumap_stats *st)
{
	emit(2, map_id, processed, drops, sched, st->pass, st->drop, st->redirect);
	return 0;
}

char LICENSE[] SEC("license") = "GPL";
