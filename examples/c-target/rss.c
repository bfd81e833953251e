/* Component `rss`: parse each frame, pick its ethtool flow type and hash fields, feed the
 * selected bytes to the Toeplitz function, and report hash, xdp_rss_hash_type and queue.
 *
 * SPEC rules: RSS-IN-001..004 (what is hashed), RSS-TOEP-001 (the hash), RSS-XFRM-002
 * (symmetric input transforms), RSS-TYPE-001 (the hash type), RSS-RETA-004/005 (queue).
 * The frame walk follows the PKT-* rules (VLAN stacks, IPv4 options and fragments, IPv6
 * extension headers) as far as RSS needs them.
 *
 * Build with -DBREAK_RSS_TYPE to get a deliberately wrong target that leaves XDP_RSS_L4
 * out of the hash type (used by tests/test_example_c_target.py).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "target.h"

/* --- constants ------------------------------------------------------------------------ */

#define ETH_HLEN 14
#define VLAN_HLEN 4
#define ETH_P_IP 0x0800
#define ETH_P_IPV6 0x86DD

#define IP_MF 0x2000
#define IP_OFFSET 0x1FFF
#define IP6_OFFSET 0xFFF8

#define NEXTHDR_HOP 0
#define NEXTHDR_ROUTING 43
#define NEXTHDR_FRAGMENT 44
#define NEXTHDR_AUTH 51
#define NEXTHDR_NONE 59
#define NEXTHDR_DEST 60

enum l4 { L4_NONE = 0, L4_ICMP = 1, L4_TCP = 6, L4_UDP = 17, L4_ICMPV6 = 58, L4_SCTP = 132, L4_OTHER = 255 };

/* ethtool flow types and RXH_* field bits */
#define TCP_V4_FLOW 0x01
#define UDP_V4_FLOW 0x02
#define SCTP_V4_FLOW 0x03
#define TCP_V6_FLOW 0x05
#define UDP_V6_FLOW 0x06
#define SCTP_V6_FLOW 0x07
#define IPV4_FLOW 0x10
#define IPV6_FLOW 0x11
#define N_FLOW_TYPES 0x12

#define RXH_IP_SRC 0x10
#define RXH_IP_DST 0x20
#define RXH_L4_B_0_1 0x40
#define RXH_L4_B_2_3 0x80
#define RXH_IP (RXH_IP_SRC | RXH_IP_DST)
#define RXH_L4 (RXH_L4_B_0_1 | RXH_L4_B_2_3)

#define RXH_XFRM_SYM_XOR 1
#define RXH_XFRM_SYM_OR_XOR 2

/* enum xdp_rss_hash_type bits */
#define XDP_RSS_L3_IPV4 0x01
#define XDP_RSS_L3_IPV6 0x02
#define XDP_RSS_L4 0x08
#define XDP_RSS_L4_TCP 0x10
#define XDP_RSS_L4_UDP 0x20
#define XDP_RSS_L4_SCTP 0x40

#define KEY_MIN_LEN 40 /* 36 input bytes at most (two IPv6 addresses, two ports) + 4 */
#define MAX_INPUT_LEN 36

/* --- the frame walk ------------------------------------------------------------------- */

struct pkt_info {
    int l3; /* 0 (not IP), 4 or 6 */
    uint8_t src[16], dst[16];
    int is_fragment;
    enum l4 l4;
    int sport, dport; /* -1: no ports */
};

static unsigned rd16(const uint8_t *p)
{
    return (unsigned)p[0] << 8 | p[1];
}

static int need(const char *field, size_t off, size_t len, size_t end, char *err)
{
    if (off + len <= end)
        return 0;
    snprintf(err, RXO_ERRLEN, "truncated: %s needs %zu bytes at offset %zu, %zu available",
             field, len, off, end > off ? end - off : 0);
    return -1;
}

/* The upper-layer header at l4_off, inside the datagram ending at `end`. */
static int parse_l4(const uint8_t *f, size_t l4_off, size_t end, int proto,
                    struct pkt_info *pi, char *err)
{
    size_t min;
    unsigned sport, dport;

    switch (proto) {
    case L4_TCP: min = 20; break;
    case L4_UDP: min = 8; break;
    case L4_SCTP: min = 12; break;
    case L4_ICMP:
    case L4_ICMPV6: min = 8; break;
    default:
        pi->l4 = L4_OTHER; /* ESP, GRE, ...: hashed as plain IP */
        return 0;
    }
    if (l4_off + min > end) {
        if (pi->is_fragment)
            return 0; /* a first fragment may stop inside its L4 header */
        return need("l4.hdr", l4_off, min, end, err);
    }
    if (proto == L4_ICMP || proto == L4_ICMPV6) {
        pi->l4 = (enum l4)proto; /* type and code, no ports */
        return 0;
    }
    sport = rd16(f + l4_off);
    dport = rd16(f + l4_off + 2);
    if (proto == L4_TCP) {
        unsigned doff = f[l4_off + 12] >> 4;
        if (doff < 5) {
            snprintf(err, RXO_ERRLEN, "malformed: TCP data offset %u below 5 words", doff);
            return -1;
        }
        if (l4_off + doff * 4 > end) {
            if (pi->is_fragment)
                return 0;
            return need("tcp.doff", l4_off, doff * 4, end, err);
        }
    }
    pi->l4 = (enum l4)proto;
    pi->sport = (int)sport;
    pi->dport = (int)dport;
    return 0;
}

static int parse_ipv4(const uint8_t *f, size_t n, size_t off, struct pkt_info *pi, char *err)
{
    unsigned version, ihl, tot_len, frag_off;
    size_t hlen;

    if (need("ipv4.hdr", off, 20, n, err))
        return -1;
    version = f[off] >> 4;
    ihl = f[off] & 0x0F;
    if (version != 4 || ihl < 5) {
        snprintf(err, RXO_ERRLEN, "malformed: IPv4 version %u, IHL %u", version, ihl);
        return -1;
    }
    hlen = ihl * 4;
    if (need("ipv4.ihl", off, hlen, n, err))
        return -1;
    tot_len = rd16(f + off + 2);
    if (tot_len < hlen) {
        snprintf(err, RXO_ERRLEN, "malformed: IPv4 total length %u below header length %zu",
                 tot_len, hlen);
        return -1;
    }
    if (need("ipv4.tot_len", off, tot_len, n, err))
        return -1;
    frag_off = rd16(f + off + 6);
    pi->l3 = 4;
    memcpy(pi->src, f + off + 12, 4);
    memcpy(pi->dst, f + off + 16, 4);
    pi->is_fragment = (frag_off & (IP_MF | IP_OFFSET)) != 0;
    if (frag_off & IP_OFFSET)
        return 0; /* a non-first fragment: no L4 header */
    return parse_l4(f, off + hlen, off + tot_len, f[off + 9], pi, err);
}

static int parse_ipv6(const uint8_t *f, size_t n, size_t off, struct pkt_info *pi, char *err)
{
    unsigned plen, proto;
    size_t end, cur;

    if (need("ipv6.hdr", off, 40, n, err))
        return -1;
    if (f[off] >> 4 != 6) {
        snprintf(err, RXO_ERRLEN, "malformed: IPv6 version %u", (unsigned)(f[off] >> 4));
        return -1;
    }
    plen = rd16(f + off + 4);
    proto = f[off + 6];
    pi->l3 = 6;
    memcpy(pi->src, f + off + 8, 16);
    memcpy(pi->dst, f + off + 24, 16);
    if (plen == 0 && proto == NEXTHDR_HOP) {
        end = n; /* possibly a jumbogram: the frame bounds it */
    } else {
        if (need("ipv6.payload_len", off, 40 + (size_t)plen, n, err))
            return -1;
        end = off + 40 + plen;
    }
    cur = off + 40;
    for (;;) {
        unsigned next;
        size_t size;
        if (proto == NEXTHDR_HOP || proto == NEXTHDR_ROUTING || proto == NEXTHDR_DEST) {
            if (need("ipv6.exthdr", cur, 2, end, err))
                return -1;
            next = f[cur];
            size = ((size_t)f[cur + 1] + 1) * 8;
        } else if (proto == NEXTHDR_AUTH) {
            if (need("ipv6.exthdr", cur, 2, end, err))
                return -1;
            next = f[cur];
            size = ((size_t)f[cur + 1] + 2) * 4;
        } else if (proto == NEXTHDR_FRAGMENT) {
            if (need("ipv6.frag", cur, 8, end, err))
                return -1;
            next = f[cur];
            pi->is_fragment = 1;
            if (rd16(f + cur + 2) & IP6_OFFSET)
                return 0; /* a non-first fragment: the rest is mid-datagram */
            cur += 8;
            proto = next;
            continue;
        } else {
            break;
        }
        if (need("ipv6.exthdr", cur, size, end, err))
            return -1;
        cur += size;
        proto = next;
    }
    if (proto == NEXTHDR_NONE)
        return 0;
    return parse_l4(f, cur, end, (int)proto, pi, err);
}

static int parse_frame(const uint8_t *f, size_t n, struct pkt_info *pi, char *err)
{
    unsigned ethertype;
    size_t off = ETH_HLEN;

    memset(pi, 0, sizeof *pi);
    pi->l4 = L4_NONE;
    pi->sport = pi->dport = -1;
    if (need("eth.hdr", 0, ETH_HLEN, n, err))
        return -1;
    ethertype = rd16(f + 12);
    while (ethertype == 0x8100 || ethertype == 0x88A8 || ethertype == 0x9100) {
        if (need("vlan.hdr", off, VLAN_HLEN, n, err))
            return -1;
        ethertype = rd16(f + off + 2);
        off += VLAN_HLEN;
    }
    if (ethertype == ETH_P_IP)
        return parse_ipv4(f, n, off, pi, err);
    if (ethertype == ETH_P_IPV6)
        return parse_ipv6(f, n, off, pi, err);
    return 0; /* not IP */
}

/* --- the Toeplitz function ------------------------------------------------------------ */

/* For every set input bit i (most significant first), XOR in the 32 key bits starting at
 * key bit i.  `window` holds those 32 bits and slides one key bit per input bit. */
static uint32_t toeplitz(const uint8_t *key, size_t key_len, const uint8_t *data, size_t len)
{
    uint32_t result = 0;
    uint32_t window = (uint32_t)key[0] << 24 | (uint32_t)key[1] << 16 |
                      (uint32_t)key[2] << 8 | key[3];
    size_t i, next = 32; /* index of the key bit that slides in next */

    for (i = 0; i < len; i++) {
        int b;
        for (b = 7; b >= 0; b--) {
            unsigned kbit = 0;
            if (data[i] >> b & 1)
                result ^= window;
            if (next / 8 < key_len)
                kbit = key[next / 8] >> (7 - next % 8) & 1;
            window = window << 1 | kbit;
            next++;
        }
    }
    return result;
}

/* --- configuration -------------------------------------------------------------------- */

struct rss_config {
    uint8_t *key;
    size_t key_len;
    int64_t *indir;
    size_t indir_len;
    int fields[N_FLOW_TYPES]; /* RXH mask per flow type; 0: hash nothing */
    int input_xfrm;
};

static int is_port_flow(int ft)
{
    return ft == TCP_V4_FLOW || ft == UDP_V4_FLOW || ft == SCTP_V4_FLOW ||
           ft == TCP_V6_FLOW || ft == UDP_V6_FLOW || ft == SCTP_V6_FLOW;
}

static int is_modelled_flow(int ft)
{
    return is_port_flow(ft) || ft == IPV4_FLOW || ft == IPV6_FLOW;
}

static int fields_symmetric(int f)
{
    return (f & ~(RXH_IP | RXH_L4)) == 0 &&
           !(f & RXH_IP_SRC) == !(f & RXH_IP_DST) &&
           !(f & RXH_L4_B_0_1) == !(f & RXH_L4_B_2_3);
}

static int parse_config(const cJSON *cfg, struct rss_config *c, char *err)
{
    const cJSON *key = cJSON_GetObjectItemCaseSensitive(cfg, "key");
    const cJSON *indir = cJSON_GetObjectItemCaseSensitive(cfg, "indir");
    const cJSON *fields = cJSON_GetObjectItemCaseSensitive(cfg, "hash_fields");
    const cJSON *xfrm = cJSON_GetObjectItemCaseSensitive(cfg, "input_xfrm");
    const cJSON *item;
    size_t i;
    int ft;

    if (!cJSON_IsString(key) || ju_hex_decode(key->valuestring, &c->key, &c->key_len)) {
        snprintf(err, RXO_ERRLEN, "config.key must be a hex string");
        return -1;
    }
    if (c->key_len < KEY_MIN_LEN) {
        snprintf(err, RXO_ERRLEN, "config.key must be at least %d bytes, got %zu",
                 KEY_MIN_LEN, c->key_len);
        return -1;
    }
    if (!cJSON_IsArray(indir) || cJSON_GetArraySize(indir) == 0) {
        snprintf(err, RXO_ERRLEN, "config.indir must be a non-empty list of ring numbers");
        return -1;
    }
    c->indir_len = (size_t)cJSON_GetArraySize(indir);
    c->indir = calloc(c->indir_len, sizeof *c->indir);
    if (c->indir == NULL) {
        snprintf(err, RXO_ERRLEN, "out of memory");
        return -1;
    }
    i = 0;
    cJSON_ArrayForEach(item, indir) {
        if (ju_get_i64(item, &c->indir[i]) || c->indir[i] < 0) {
            snprintf(err, RXO_ERRLEN, "config.indir[%zu] must be a ring number >= 0", i);
            return -1;
        }
        i++;
    }

    memset(c->fields, 0, sizeof c->fields);
    if (fields == NULL || cJSON_IsNull(fields)) {
        /* RSS-CFG-004 defaults: 4-tuple for TCP and UDP, addresses for the rest */
        c->fields[TCP_V4_FLOW] = c->fields[UDP_V4_FLOW] = RXH_IP | RXH_L4;
        c->fields[TCP_V6_FLOW] = c->fields[UDP_V6_FLOW] = RXH_IP | RXH_L4;
        c->fields[SCTP_V4_FLOW] = c->fields[SCTP_V6_FLOW] = RXH_IP;
        c->fields[IPV4_FLOW] = c->fields[IPV6_FLOW] = RXH_IP;
    } else if (cJSON_IsObject(fields)) {
        cJSON_ArrayForEach(item, fields) {
            char *end;
            long flow = strtol(item->string, &end, 10);
            int64_t mask;
            if (end == item->string || *end != '\0' || flow < 0 || flow >= N_FLOW_TYPES ||
                !is_modelled_flow((int)flow)) {
                snprintf(err, RXO_ERRLEN, "config.hash_fields: flow type %.20s not modelled",
                         item->string);
                return -1;
            }
            if (ju_get_i64(item, &mask) ||
                (mask & ~(int64_t)(is_port_flow((int)flow) ? RXH_IP | RXH_L4 : RXH_IP))) {
                snprintf(err, RXO_ERRLEN, "config.hash_fields[%ld]: bad RXH mask", flow);
                return -1;
            }
            c->fields[flow] = (int)mask;
        }
    } else {
        snprintf(err, RXO_ERRLEN, "config.hash_fields must be an object");
        return -1;
    }

    c->input_xfrm = 0;
    if (xfrm != NULL && !cJSON_IsNull(xfrm)) {
        int64_t x;
        if (ju_get_i64(xfrm, &x) || (x != 0 && x != RXH_XFRM_SYM_XOR && x != RXH_XFRM_SYM_OR_XOR)) {
            snprintf(err, RXO_ERRLEN, "config.input_xfrm must be 0, 1 or 2");
            return -1;
        }
        c->input_xfrm = (int)x;
    }
    if (c->input_xfrm) {
        for (ft = 0; ft < N_FLOW_TYPES; ft++) {
            if (!fields_symmetric(c->fields[ft])) {
                snprintf(err, RXO_ERRLEN,
                         "symmetric input_xfrm needs symmetric fields (flow type %#x)", ft);
                return -1;
            }
        }
    }
    return 0;
}

/* --- one packet ----------------------------------------------------------------------- */

/* Append the pair (a, b) or its symmetric transform to buf (RSS-XFRM-002). */
static size_t put_pair(uint8_t *buf, size_t o, const uint8_t *a, const uint8_t *b,
                       size_t len, int xfrm)
{
    size_t i;
    for (i = 0; i < len; i++) {
        uint8_t x = (uint8_t)(a[i] ^ b[i]);
        if (xfrm == RXH_XFRM_SYM_XOR) {
            buf[o + i] = x;
            buf[o + len + i] = x;
        } else if (xfrm == RXH_XFRM_SYM_OR_XOR) {
            buf[o + i] = (uint8_t)(a[i] | b[i]);
            buf[o + len + i] = x;
        } else {
            buf[o + i] = a[i];
            buf[o + len + i] = b[i];
        }
    }
    return o + 2 * len;
}

static int flow_type_of(const struct pkt_info *pi)
{
    if (pi->l3 == 0)
        return -1;
    if (!pi->is_fragment && pi->sport >= 0 && pi->dport >= 0) {
        switch (pi->l4) {
        case L4_TCP: return pi->l3 == 4 ? TCP_V4_FLOW : TCP_V6_FLOW;
        case L4_UDP: return pi->l3 == 4 ? UDP_V4_FLOW : UDP_V6_FLOW;
        case L4_SCTP: return pi->l3 == 4 ? SCTP_V4_FLOW : SCTP_V6_FLOW;
        default: break;
        }
    }
    return pi->l3 == 4 ? IPV4_FLOW : IPV6_FLOW; /* fragments, other protocols (RSS-IN-003) */
}

/* Hash one packet.  Returns 0 and fills hash/type if hashed, 1 if not hashed. */
static int rss_packet(const struct pkt_info *pi, const struct rss_config *c,
                      uint32_t *hash, unsigned *type)
{
    int ft = flow_type_of(pi), fields, hashed_l4;
    uint8_t input[MAX_INPUT_LEN], sp[2], dp[2];
    size_t alen, o = 0;

    if (ft < 0)
        return 1; /* RSS-IN-004: not IP */
    fields = c->fields[ft];
    if (fields == 0)
        return 1; /* RSS-IN-004: no fields for this flow type */
    if (!is_port_flow(ft))
        fields &= RXH_IP;
    alen = pi->l3 == 4 ? 4 : 16;
    sp[0] = (uint8_t)(pi->sport >> 8);
    sp[1] = (uint8_t)pi->sport;
    dp[0] = (uint8_t)(pi->dport >> 8);
    dp[1] = (uint8_t)pi->dport;
    if (c->input_xfrm) {
        if (fields & RXH_IP)
            o = put_pair(input, o, pi->src, pi->dst, alen, c->input_xfrm);
        if (fields & RXH_L4)
            o = put_pair(input, o, sp, dp, 2, c->input_xfrm);
    } else { /* RSS-IN-002: src addr, dst addr, src port, dst port */
        if (fields & RXH_IP_SRC) {
            memcpy(input + o, pi->src, alen);
            o += alen;
        }
        if (fields & RXH_IP_DST) {
            memcpy(input + o, pi->dst, alen);
            o += alen;
        }
        if (fields & RXH_L4_B_0_1) {
            memcpy(input + o, sp, 2);
            o += 2;
        }
        if (fields & RXH_L4_B_2_3) {
            memcpy(input + o, dp, 2);
            o += 2;
        }
    }
    *hash = toeplitz(c->key, c->key_len, input, o);

    /* RSS-TYPE-001: L3 bit, plus XDP_RSS_L4 and the protocol bit when ports were hashed */
    hashed_l4 = is_port_flow(ft) && (fields & RXH_L4);
    *type = pi->l3 == 4 ? XDP_RSS_L3_IPV4 : XDP_RSS_L3_IPV6;
    if (hashed_l4) {
#ifndef BREAK_RSS_TYPE
        *type |= XDP_RSS_L4;
#endif
        *type |= pi->l4 == L4_TCP ? XDP_RSS_L4_TCP
                 : pi->l4 == L4_UDP ? XDP_RSS_L4_UDP : XDP_RSS_L4_SCTP;
    }
    return 0;
}

cJSON *rss_run(const cJSON *scenario, char *err)
{
    const cJSON *cfg = cJSON_GetObjectItemCaseSensitive(scenario, "config");
    const cJSON *frames = cJSON_GetObjectItemCaseSensitive(scenario, "frames");
    const cJSON *item;
    struct rss_config c;
    cJSON *obs = NULL, *packets;
    size_t idx = 0;

    memset(&c, 0, sizeof c);
    if (!cJSON_IsObject(cfg)) {
        snprintf(err, RXO_ERRLEN, "rss scenario needs a config object");
        goto out;
    }
    if (parse_config(cfg, &c, err))
        goto out;
    if (frames != NULL && !cJSON_IsArray(frames)) {
        snprintf(err, RXO_ERRLEN, "scenario.frames must be a list");
        goto out;
    }
    obs = cJSON_CreateObject();
    packets = cJSON_AddArrayToObject(obs, "packets");
    cJSON_ArrayForEach(item, frames) {
        uint8_t *frame;
        size_t len;
        struct pkt_info pi;
        uint32_t hash = 0;
        unsigned type = 0;
        int64_t queue;
        char why[RXO_ERRLEN];
        cJSON *pkt;

        if (!cJSON_IsString(item) || ju_hex_decode(item->valuestring, &frame, &len)) {
            snprintf(err, RXO_ERRLEN, "frames[%zu] is not a hex string", idx);
            goto fail;
        }
        if (parse_frame(frame, len, &pi, why)) {
            snprintf(err, RXO_ERRLEN, "frames[%zu]: %.200s", idx, why);
            free(frame);
            goto fail;
        }
        free(frame);
        pkt = cJSON_CreateObject();
        if (rss_packet(&pi, &c, &hash, &type) == 0) {
            cJSON_AddItemToObject(pkt, "hash", ju_u64(hash));
            queue = c.indir[hash % c.indir_len];
        } else {
            cJSON_AddNullToObject(pkt, "hash");
            queue = c.indir[0]; /* RSS-RETA-005 */
        }
        cJSON_AddItemToObject(pkt, "hash_type", ju_u64(type));
        cJSON_AddItemToObject(pkt, "queue", ju_i64(queue));
        cJSON_AddItemToArray(packets, pkt);
        idx++;
    }
    goto out;
fail:
    cJSON_Delete(obs);
    obs = NULL;
out:
    free(c.key);
    free(c.indir);
    return obs;
}
