/* Component `kfunc`: XDP RX metadata kfunc dispatch and the device-bound rules.
 *
 * Devices come from config.devices; events (prog_load, attach, map_update, call) run in
 * order and each yields an rc (0 or -errno), calls also the outputs the kfunc wrote.
 * SPEC rules: KFUNC-LOAD-001..006 (loading), KFUNC-ATTACH-001..005 (netlink attach),
 * KFUNC-MAP-001..004 (program maps), KFUNC-API-003/004/007 and KFUNC-CALL-001 (calls and
 * the xdp-rx-metadata-features bits).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "target.h"

/* errno values (Linux) */
#define E_BADF 9
#define E_NOMEM 12
#define E_BUSY 16
#define E_EXIST 17
#define E_NODEV 19
#define E_INVAL 22
#define E_OPNOTSUPP 95

/* uapi constants */
#define BPF_PROG_TYPE_SCHED_CLS 3
#define BPF_PROG_TYPE_XDP 6
#define BPF_PROG_TYPE_EXT 28
#define BPF_XDP_DEVMAP 33
#define BPF_XDP_CPUMAP 35

#define BPF_F_XDP_HAS_FRAGS (1 << 5)
#define BPF_F_XDP_DEV_BOUND_ONLY (1 << 6)
/* STRICT_ALIGNMENT, ANY_ALIGNMENT, TEST_RND_HI32, TEST_STATE_FREQ, SLEEPABLE,
 * XDP_HAS_FRAGS, XDP_DEV_BOUND_ONLY, TEST_REG_INVARIANTS, TOKEN_FD */
#define BPF_PROG_LOAD_FLAGS (0xFF | (1 << 16))

#define BPF_MAP_TYPE_PROG_ARRAY 3
#define BPF_MAP_TYPE_DEVMAP 14
#define BPF_MAP_TYPE_CPUMAP 16
#define BPF_MAP_TYPE_DEVMAP_HASH 25

#define XDP_FLAGS_UPDATE_IF_NOEXIST (1 << 0)
#define XDP_FLAGS_SKB_MODE (1 << 1)
#define XDP_FLAGS_DRV_MODE (1 << 2)
#define XDP_FLAGS_HW_MODE (1 << 3)
#define XDP_FLAGS_MODES (XDP_FLAGS_SKB_MODE | XDP_FLAGS_DRV_MODE | XDP_FLAGS_HW_MODE)

enum mode { MODE_SKB, MODE_DRV, MODE_HW, N_MODES };

/* The three metadata kfuncs, in enum xdp_rx_metadata order; bit i of a features value
 * (NETDEV_XDP_RX_METADATA_*) is kfunc i. */
enum { KF_TIMESTAMP, KF_HASH, KF_VLAN_TAG, N_KFUNCS };
static const char *const kfunc_names[N_KFUNCS] = {"rx_timestamp", "rx_hash", "rx_vlan_tag"};
static const char *const kfunc_fields[N_KFUNCS][2] = {
    {"timestamp", NULL}, {"hash", "rss_type"}, {"vlan_proto", "vlan_tci"}};
static const uint64_t kfunc_limits[N_KFUNCS][2] = {
    {UINT64_MAX, 0}, {UINT32_MAX, UINT32_MAX}, {0xFFFF, 0xFFFF}};

static int kfunc_id(const char *name)
{
    int i;
    for (i = 0; i < N_KFUNCS; i++)
        if (name != NULL && strcmp(name, kfunc_names[i]) == 0)
            return i;
    return -1;
}

static int n_outputs(int kf)
{
    return kfunc_fields[kf][1] == NULL ? 1 : 2;
}

/* What a driver's xdp_metadata_ops member returns for every packet. */
struct op_result {
    int present; /* 0: the member is NULL */
    int64_t rc;
    int written[2];
    uint64_t value[2];
};

struct device {
    int64_t ifindex;
    int ndo_bpf;
    const char *offdev; /* NULL: not an offload device */
    int offload_entry;  /* has a bpf_offload_netdev (offload driver or a bound program) */
    struct op_result ops[N_KFUNCS];
    int xdp_state[N_MODES]; /* index of the loading event of the attached program, or -1 */
};

struct prog {
    int loaded;
    int64_t prog_type, expected_attach_type, prog_flags;
    unsigned calls; /* bit per kfunc */
    int dev_bound, offloaded;
    struct device *netdev;
};

struct world {
    struct device *devs;
    size_t n_devs;
    struct prog *progs; /* one slot per event; loaded only for successful prog_load */
    size_t n_events;
};

static struct device *find_dev(struct world *w, int64_t ifindex)
{
    size_t i;
    for (i = 0; i < w->n_devs; i++)
        if (w->devs[i].ifindex == ifindex)
            return &w->devs[i];
    return NULL;
}

/* Integer member `key` of obj, `dflt` when absent.  Returns 0 or -1 (not an integer). */
static int get_int(const cJSON *obj, const char *key, int64_t dflt, int64_t *out)
{
    const cJSON *item = cJSON_GetObjectItemCaseSensitive(obj, key);
    if (item == NULL) {
        *out = dflt;
        return 0;
    }
    return ju_get_i64(item, out);
}

/* --- configuration -------------------------------------------------------------------- */

static int parse_ops(const cJSON *ops, struct device *d, char *err)
{
    const cJSON *item;

    if (ops == NULL || cJSON_IsNull(ops))
        return 0;
    if (!cJSON_IsObject(ops)) {
        snprintf(err, RXO_ERRLEN, "device %lld: ops must be an object", (long long)d->ifindex);
        return -1;
    }
    cJSON_ArrayForEach(item, ops) {
        int kf = kfunc_id(item->string), j;
        struct op_result *r;
        if (kf < 0 || !cJSON_IsObject(item)) {
            snprintf(err, RXO_ERRLEN, "device %lld: unknown ops member %.40s",
                     (long long)d->ifindex, item->string);
            return -1;
        }
        r = &d->ops[kf];
        r->present = 1;
        if (ju_get_i64(cJSON_GetObjectItemCaseSensitive(item, "rc"), &r->rc)) {
            snprintf(err, RXO_ERRLEN, "device %lld: %s.rc must be an integer",
                     (long long)d->ifindex, kfunc_names[kf]);
            return -1;
        }
        for (j = 0; j < n_outputs(kf); j++) {
            const cJSON *v = cJSON_GetObjectItemCaseSensitive(item, kfunc_fields[kf][j]);
            if (v == NULL || cJSON_IsNull(v))
                continue;
            if (ju_get_u64(v, &r->value[j])) {
                snprintf(err, RXO_ERRLEN, "device %lld: %s.%s must be an unsigned integer",
                         (long long)d->ifindex, kfunc_names[kf], kfunc_fields[kf][j]);
                return -1;
            }
            r->written[j] = 1;
        }
    }
    return 0;
}

static int parse_devices(const cJSON *cfg, struct world *w, char *err)
{
    const cJSON *devs = cJSON_GetObjectItemCaseSensitive(cfg, "devices");
    const cJSON *d;
    size_t i = 0;

    if (devs == NULL || cJSON_IsNull(devs))
        return 0;
    if (!cJSON_IsArray(devs)) {
        snprintf(err, RXO_ERRLEN, "config.devices must be a list");
        return -1;
    }
    w->n_devs = (size_t)cJSON_GetArraySize(devs);
    w->devs = calloc(w->n_devs + 1, sizeof *w->devs);
    if (w->devs == NULL) {
        snprintf(err, RXO_ERRLEN, "out of memory");
        return -1;
    }
    cJSON_ArrayForEach(d, devs) {
        struct device *dev = &w->devs[i];
        const cJSON *ndo = cJSON_GetObjectItemCaseSensitive(d, "ndo_bpf");
        const cJSON *offdev = cJSON_GetObjectItemCaseSensitive(d, "offdev");
        int m;

        if (!cJSON_IsObject(d) ||
            ju_get_i64(cJSON_GetObjectItemCaseSensitive(d, "ifindex"), &dev->ifindex)) {
            snprintf(err, RXO_ERRLEN, "config.devices[%zu] needs an integer ifindex", i);
            return -1;
        }
        w->n_devs = i; /* only the devices before this one, for the duplicate check */
        if (find_dev(w, dev->ifindex) != NULL) {
            snprintf(err, RXO_ERRLEN, "ifindex %lld already in use", (long long)dev->ifindex);
            return -1;
        }
        /* absent: the driver has ndo_bpf; otherwise the value's truth */
        dev->ndo_bpf = ndo == NULL || cJSON_IsTrue(ndo) ||
                       (cJSON_IsNumber(ndo) && ndo->valuedouble != 0);
        if (offdev != NULL && !cJSON_IsNull(offdev) && !cJSON_IsString(offdev)) {
            snprintf(err, RXO_ERRLEN, "config.devices[%zu].offdev must be a string or null", i);
            return -1;
        }
        dev->offdev = cJSON_IsString(offdev) ? offdev->valuestring : NULL;
        /* an offload-capable driver registers its devices in the offload table */
        dev->offload_entry = dev->offdev != NULL;
        for (m = 0; m < N_MODES; m++)
            dev->xdp_state[m] = -1;
        if (parse_ops(cJSON_GetObjectItemCaseSensitive(d, "ops"), dev, err))
            return -1;
        i++;
        w->n_devs = i;
    }
    return 0;
}

/* --- BPF_PROG_LOAD (KFUNC-LOAD-*) ----------------------------------------------------- */

/* bpf_prog_dev_bound_init() refusals, in kernel order (KFUNC-LOAD-003, KFUNC-LOAD-004). */
static int64_t dev_bound_checks(struct world *w, const struct prog *p, int64_t ifindex)
{
    int bound_only = (p->prog_flags & BPF_F_XDP_DEV_BOUND_ONLY) != 0;
    struct device *dev;

    if (p->prog_type != BPF_PROG_TYPE_SCHED_CLS && p->prog_type != BPF_PROG_TYPE_XDP)
        return -E_INVAL;
    if (p->prog_flags & ~(int64_t)(BPF_F_XDP_DEV_BOUND_ONLY | BPF_F_XDP_HAS_FRAGS))
        return -E_INVAL;
    if ((p->prog_flags & BPF_F_XDP_HAS_FRAGS) && !bound_only)
        return -E_INVAL;
    if (p->prog_type == BPF_PROG_TYPE_SCHED_CLS && bound_only)
        return -E_INVAL;
    dev = find_dev(w, ifindex);
    if (dev == NULL)
        return -E_INVAL;
    if (!dev->ndo_bpf)
        return -E_OPNOTSUPP;
    if (!bound_only && dev->offdev == NULL)
        return -E_INVAL; /* offload needs a device registered by an offload driver */
    return 0;
}

static int prog_load(struct world *w, const cJSON *ev, struct prog *p, int64_t *rc, char *err)
{
    const cJSON *calls = cJSON_GetObjectItemCaseSensitive(ev, "calls");
    const cJSON *c;
    int64_t ifindex;

    memset(p, 0, sizeof *p);
    if (get_int(ev, "prog_type", BPF_PROG_TYPE_XDP, &p->prog_type) ||
        get_int(ev, "expected_attach_type", 0, &p->expected_attach_type) ||
        get_int(ev, "prog_flags", 0, &p->prog_flags) ||
        get_int(ev, "prog_ifindex", 0, &ifindex)) {
        snprintf(err, RXO_ERRLEN, "prog_load: integer fields expected");
        return -1;
    }
    if (calls != NULL && !cJSON_IsArray(calls)) {
        snprintf(err, RXO_ERRLEN, "prog_load: calls must be a list");
        return -1;
    }
    cJSON_ArrayForEach(c, calls) {
        int kf = kfunc_id(cJSON_GetStringValue(c));
        if (kf < 0) {
            snprintf(err, RXO_ERRLEN, "prog_load: unknown kfunc in calls");
            return -1;
        }
        p->calls |= 1u << kf;
    }

    if (p->prog_flags & ~(int64_t)BPF_PROG_LOAD_FLAGS) { /* KFUNC-LOAD-001 */
        *rc = -E_INVAL;
        return 0;
    }
    p->dev_bound = ifindex != 0; /* KFUNC-LOAD-002 */
    if (p->dev_bound) {
        *rc = dev_bound_checks(w, p, ifindex);
        if (*rc)
            return 0;
        p->netdev = find_dev(w, ifindex);
        p->offloaded = !(p->prog_flags & BPF_F_XDP_DEV_BOUND_ONLY);
    }
    if (p->calls && (!p->dev_bound || p->offloaded)) { /* KFUNC-LOAD-005 */
        *rc = -E_INVAL;
        return 0;
    }
    if (p->netdev != NULL)
        p->netdev->offload_entry = 1; /* KFUNC-LOAD-004: binding creates the entry */
    p->loaded = 1;
    *rc = 0;
    return 0;
}

/* --- netlink XDP attach (KFUNC-ATTACH-*) ---------------------------------------------- */

/* bpf_offload_dev_match() (KFUNC-ATTACH-003): the bound device itself; an offloaded
 * program also matches a device whose offload table entry names the same offload device.
 * A bound-only program matches its own device only (the test 6.12.117 and 7.3.4 add before
 * the comparison; without it two plain bind targets, both with no offload device, match). */
static int offload_dev_match(const struct prog *p, const struct device *dev)
{
    const char *a, *b;

    if (!p->dev_bound || p->netdev == NULL)
        return 0;
    if (p->netdev == dev)
        return 1;
    if (!p->offloaded)
        return 0;
    if (!p->netdev->offload_entry || !dev->offload_entry)
        return 0;
    a = p->netdev->offdev;
    b = dev->offdev;
    return a != NULL && b != NULL && strcmp(a, b) == 0;
}

static int attach(struct world *w, const cJSON *ev, int prog_idx, int64_t *rc, char *err)
{
    const struct prog *p = &w->progs[prog_idx];
    struct device *dev;
    int64_t ifindex, flags;
    enum mode mode, other;
    int m, n_attached = 0, n_modes = 0, cur, offload;

    if (get_int(ev, "ifindex", 0, &ifindex) || get_int(ev, "flags", 0, &flags)) {
        snprintf(err, RXO_ERRLEN, "attach: integer fields expected");
        return -1;
    }
    dev = find_dev(w, ifindex);
    if (dev == NULL) {
        *rc = -E_NODEV;
        return 0;
    }
    if (flags & ~(int64_t)(XDP_FLAGS_UPDATE_IF_NOEXIST | XDP_FLAGS_MODES)) {
        snprintf(err, RXO_ERRLEN, "attach: only mode bits and UPDATE_IF_NOEXIST are modelled");
        return -1;
    }
    /* dev_xdp_mode(): HW, then DRV, then SKB; unset: DRV with ndo_bpf, else SKB */
    if (flags & XDP_FLAGS_HW_MODE)
        mode = MODE_HW;
    else if (flags & XDP_FLAGS_DRV_MODE)
        mode = MODE_DRV;
    else if (flags & XDP_FLAGS_SKB_MODE)
        mode = MODE_SKB;
    else
        mode = dev->ndo_bpf ? MODE_DRV : MODE_SKB;

    /* KFUNC-ATTACH-001: fetching the program */
    if (p->prog_type != BPF_PROG_TYPE_XDP || (p->offloaded && mode == MODE_SKB)) {
        *rc = -E_INVAL;
        return 0;
    }
    /* KFUNC-ATTACH-002: one mode flag; no flag is ambiguous with several programs */
    for (m = 0; m < N_MODES; m++)
        n_attached += dev->xdp_state[m] >= 0;
    n_modes = !!(flags & XDP_FLAGS_SKB_MODE) + !!(flags & XDP_FLAGS_DRV_MODE) +
              !!(flags & XDP_FLAGS_HW_MODE);
    if (n_modes > 1 || (n_modes == 0 && n_attached > 1)) {
        *rc = -E_INVAL;
        return 0;
    }
    cur = dev->xdp_state[mode];
    offload = mode == MODE_HW;
    other = mode == MODE_SKB ? MODE_DRV : MODE_SKB;
    /* KFUNC-ATTACH-004, dev_xdp_attach() order */
    if ((flags & XDP_FLAGS_UPDATE_IF_NOEXIST) && cur >= 0)
        *rc = -E_BUSY;
    else if (!offload && dev->xdp_state[other] >= 0)
        *rc = -E_EXIST;
    else if (!offload && p->offloaded)
        *rc = -E_INVAL;
    else if (p->dev_bound && !offload_dev_match(p, dev))
        *rc = -E_INVAL;
    else if (p->dev_bound && mode == MODE_SKB)
        *rc = -E_INVAL;
    else if (p->expected_attach_type == BPF_XDP_DEVMAP ||
             p->expected_attach_type == BPF_XDP_CPUMAP)
        *rc = -E_INVAL;
    /* KFUNC-ATTACH-005: native and HW modes need ndo_bpf */
    else if (cur != prog_idx && mode != MODE_SKB && !dev->ndo_bpf)
        *rc = -E_OPNOTSUPP;
    else {
        dev->xdp_state[mode] = prog_idx;
        *rc = 0;
    }
    return 0;
}

/* --- program maps (KFUNC-MAP-*) ------------------------------------------------------- */

static int map_update(const struct prog *p, const cJSON *ev, int64_t *rc, char *err)
{
    int64_t type;
    int ok;

    if (get_int(ev, "map_type", -1, &type)) {
        snprintf(err, RXO_ERRLEN, "map_update: map_type must be an integer");
        return -1;
    }
    /* a device-bound program is never map-compatible (KFUNC-MAP-001) */
    if (type == BPF_MAP_TYPE_PROG_ARRAY) {
        ok = p->prog_type != BPF_PROG_TYPE_EXT && !p->dev_bound;
        *rc = ok ? 0 : -E_INVAL;
    } else if (type == BPF_MAP_TYPE_DEVMAP || type == BPF_MAP_TYPE_DEVMAP_HASH) {
        ok = p->prog_type == BPF_PROG_TYPE_XDP && !p->offloaded &&
             p->expected_attach_type == BPF_XDP_DEVMAP && !p->dev_bound;
        *rc = ok ? 0 : -E_INVAL;
    } else if (type == BPF_MAP_TYPE_CPUMAP) {
        ok = p->prog_type == BPF_PROG_TYPE_XDP && !p->offloaded &&
             p->expected_attach_type == BPF_XDP_CPUMAP && !p->dev_bound;
        *rc = ok ? 0 : -E_NOMEM;
    } else {
        snprintf(err, RXO_ERRLEN, "map_update: map type %lld does not hold programs",
                 (long long)type);
        return -1;
    }
    return 0;
}

/* --- kfunc calls (KFUNC-CALL-001, KFUNC-API-003) -------------------------------------- */

static int call(const struct prog *p, int kf, cJSON *out, char *err)
{
    const struct op_result *r;
    int j;

    if (!(p->calls & (1u << kf))) {
        snprintf(err, RXO_ERRLEN, "call: the program was loaded without a call to %s",
                 kfunc_names[kf]);
        return -1;
    }
    /* calls were resolved at load time to the bound device's member */
    r = p->netdev != NULL ? &p->netdev->ops[kf] : NULL;
    if (r == NULL || !r->present) { /* default body: -EOPNOTSUPP, nothing written */
        cJSON_AddItemToObject(out, "rc", ju_i64(-E_OPNOTSUPP));
        for (j = 0; j < n_outputs(kf); j++)
            cJSON_AddNullToObject(out, kfunc_fields[kf][j]);
        return 0;
    }
    /* KFUNC-API-006: what a C driver member could have produced */
    if (r->rc > 0) {
        snprintf(err, RXO_ERRLEN, "ops %s: rc must be 0 or a negative errno", kfunc_names[kf]);
        return -1;
    }
    for (j = 0; j < n_outputs(kf); j++) {
        if ((r->rc == 0 && !r->written[j]) ||
            (r->written[j] && r->value[j] > kfunc_limits[kf][j])) {
            snprintf(err, RXO_ERRLEN, "ops %s: %s missing or out of range", kfunc_names[kf],
                     kfunc_fields[kf][j]);
            return -1;
        }
    }
    cJSON_AddItemToObject(out, "rc", ju_i64(r->rc));
    for (j = 0; j < n_outputs(kf); j++) {
        if (r->written[j])
            cJSON_AddItemToObject(out, kfunc_fields[kf][j], ju_u64(r->value[j]));
        else
            cJSON_AddNullToObject(out, kfunc_fields[kf][j]);
    }
    return 0;
}

/* --- one scenario --------------------------------------------------------------------- */

static int cmp_dev(const void *a, const void *b)
{
    const struct device *x = *(const struct device *const *)a;
    const struct device *y = *(const struct device *const *)b;
    return (x->ifindex > y->ifindex) - (x->ifindex < y->ifindex);
}

static int run_event(struct world *w, const cJSON *ev, size_t i, cJSON *out, char *err)
{
    const char *op = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(ev, "op"));
    int64_t rc = 0, prog_idx;
    const struct prog *p = NULL;
    int kf = -1, j;

    if (op == NULL) {
        snprintf(err, RXO_ERRLEN, "events[%zu] has no op", i);
        return -1;
    }
    if (strcmp(op, "prog_load") == 0) {
        if (prog_load(w, ev, &w->progs[i], &rc, err))
            return -1;
        cJSON_AddItemToObject(out, "rc", ju_i64(rc));
        return 0;
    }
    if (strcmp(op, "attach") != 0 && strcmp(op, "map_update") != 0 && strcmp(op, "call") != 0) {
        snprintf(err, RXO_ERRLEN, "events[%zu]: unknown op %.40s", i, op);
        return -1;
    }
    if (strcmp(op, "call") == 0) {
        kf = kfunc_id(cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(ev, "kfunc")));
        if (kf < 0) {
            snprintf(err, RXO_ERRLEN, "events[%zu]: unknown kfunc", i);
            return -1;
        }
    }
    if (ju_get_i64(cJSON_GetObjectItemCaseSensitive(ev, "prog"), &prog_idx)) {
        snprintf(err, RXO_ERRLEN, "events[%zu]: prog must be an event index", i);
        return -1;
    }
    /* `prog` names an earlier event that loaded a program; anything else has no fd */
    if (prog_idx >= 0 && (size_t)prog_idx < i && w->progs[prog_idx].loaded)
        p = &w->progs[prog_idx];
    if (p == NULL) {
        cJSON_AddItemToObject(out, "rc", ju_i64(-E_BADF));
        for (j = 0; kf >= 0 && j < n_outputs(kf); j++)
            cJSON_AddNullToObject(out, kfunc_fields[kf][j]);
        return 0;
    }
    if (strcmp(op, "attach") == 0) {
        if (attach(w, ev, (int)prog_idx, &rc, err))
            return -1;
    } else if (strcmp(op, "map_update") == 0) {
        if (map_update(p, ev, &rc, err))
            return -1;
    } else {
        return call(p, kf, out, err);
    }
    cJSON_AddItemToObject(out, "rc", ju_i64(rc));
    return 0;
}

cJSON *kfunc_run(const cJSON *scenario, char *err)
{
    const cJSON *cfg = cJSON_GetObjectItemCaseSensitive(scenario, "config");
    const cJSON *events = cJSON_GetObjectItemCaseSensitive(scenario, "events");
    const cJSON *ev;
    struct world w;
    struct device **sorted = NULL;
    cJSON *obs = NULL, *out_events, *features;
    size_t i = 0;

    memset(&w, 0, sizeof w);
    if (cfg != NULL && !cJSON_IsObject(cfg)) {
        snprintf(err, RXO_ERRLEN, "scenario.config must be an object");
        goto out;
    }
    if (parse_devices(cfg, &w, err))
        goto out;
    if (events != NULL && !cJSON_IsArray(events)) {
        snprintf(err, RXO_ERRLEN, "scenario.events must be a list");
        goto out;
    }
    w.n_events = (size_t)cJSON_GetArraySize(events);
    w.progs = calloc(w.n_events + 1, sizeof *w.progs);
    sorted = calloc(w.n_devs + 1, sizeof *sorted);
    if (w.progs == NULL || sorted == NULL) {
        snprintf(err, RXO_ERRLEN, "out of memory");
        goto out;
    }
    obs = cJSON_CreateObject();
    out_events = cJSON_AddArrayToObject(obs, "events");
    cJSON_ArrayForEach(ev, events) {
        cJSON *out = cJSON_CreateObject();
        cJSON_AddItemToArray(out_events, out);
        if (!cJSON_IsObject(ev) || run_event(&w, ev, i, out, err)) {
            if (!cJSON_IsObject(ev))
                snprintf(err, RXO_ERRLEN, "events[%zu] must be an object", i);
            cJSON_Delete(obs);
            obs = NULL;
            goto out;
        }
        i++;
    }
    /* KFUNC-API-007: xdp-rx-metadata-features, the non-NULL ops members */
    features = cJSON_AddObjectToObject(obs, "features");
    for (i = 0; i < w.n_devs; i++)
        sorted[i] = &w.devs[i];
    qsort(sorted, w.n_devs, sizeof *sorted, cmp_dev);
    for (i = 0; i < w.n_devs; i++) {
        char key[32];
        unsigned bits = 0;
        int kf;
        for (kf = 0; kf < N_KFUNCS; kf++)
            if (sorted[i]->ops[kf].present)
                bits |= 1u << kf;
        snprintf(key, sizeof key, "%lld", (long long)sorted[i]->ifindex);
        cJSON_AddItemToObject(features, key, ju_u64(bits));
    }
out:
    free(sorted);
    free(w.progs);
    free(w.devs);
    return obs;
}
