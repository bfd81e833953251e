#!/bin/busybox sh
# rx-oracle qemu-fec guest init (conformance/live/qemu_fec/guest.py drives it).
# Sets up eth0 with the fec driver and the probe, prints "RXO-READY", then polls the
# probe's control map for commands the host sent as control frames (the serial console
# only carries output: its input side dies on QEMU 7.2, see guest.py).  Each command
# prints "RXO-BEGIN SEQ", its output, and "RXO-ACK SEQ STATUS".
/bin/busybox --install -s /bin
export PATH=/bin:/sbin:/usr/bin:/usr/sbin
mount -t proc proc /proc
mount -t sysfs sys /sys
mount -t devtmpfs dev /dev
mount -t bpf bpf /sys/fs/bpf
echo 1 > /proc/sys/net/ipv6/conf/default/disable_ipv6
echo 1 > /proc/sys/net/ipv6/conf/all/disable_ipv6
for m in $(cat /modules/order); do
	insmod "/modules/$m.ko" || echo "RXO-FAIL insmod $m"
done
i=0
while [ ! -e /sys/class/net/eth0 ] && [ $i -lt 200 ]; do sleep 0.05; i=$((i + 1)); done
[ -e /sys/class/net/eth0 ] || echo "RXO-FAIL no eth0: $(ls /sys/class/net)"
echo 1 > /proc/sys/net/ipv6/conf/eth0/disable_ipv6
ip link set eth0 promisc on
S=/sys/class/net/eth0/statistics
M=/sys/fs/bpf/rxom
P=/sys/fs/bpf/rxo
# A probe calling the metadata kfuncs is bound to eth0 (its XDP program only), so the
# kernel resolves them through the driver's xdp_metadata_ops.
XM=
[ -e /probe.devbound ] && XM="xdpmeta_dev eth0"
if ! bpftool prog loadall /probe.o $P pinmaps $M $XM; then
	echo "RXO-FAIL probe load"
fi
echo 1 > /proc/sys/net/core/bpf_jit_enable 2>/dev/null
ip link set eth0 up
bpftool net attach tcx_ingress pinned $P/rxo_ctl dev eth0 || echo "RXO-FAIL control attach"
dmesg -n 1

# Shell builtins only in the loops below: every fork of busybox costs milliseconds on
# the emulated CPU.
# rxo_carrier: until the PHY reports the link (or 4 s).
rxo_carrier() {
	n=0
	while :; do
		read -r c < /sys/class/net/eth0/carrier 2>/dev/null
		[ "$c" = 1 ] && return 0
		[ $n -ge 400 ] && return 1
		sleep 0.01; n=$((n + 1))
	done
}

# rxo_reset XDP CSUM VLAN: program off, down, rx checksum and VLAN stripping on/off (not
# on the legacy board, whose imx27 quirks offer neither), the probe on if XDP=1, up,
# carrier, the probe's packet counter back to 0.  Down/up is what makes the device new:
# fec_enet_close frees the ring, the page_pool and the XDP counters, fec_enet_open builds
# them again.
rxo_reset() {
	bpftool net detach xdpdrv dev eth0 2>/dev/null
	ip link set eth0 down
	if [ "$2" != - ]; then
		ethtool -K eth0 rx "$2" rxvlan "$3" >/dev/null 2>&1
	fi
	if [ "$1" = 1 ]; then
		bpftool net attach xdpdrv pinned $P/rxo_probe dev eth0 || return 1
	fi
	ip link set eth0 up || return 1
	rxo_carrier || return 2
	bpftool map update pinned $M/seqmap key hex 00 00 00 00 value hex 00 00 00 00
}

rxo_netdev() {
	for f in $S/*; do read -r v < "$f"; echo "RXO-NETDEV ${f##*/} $v"; done
}

# rxo_seen: SEEN = rx_packets + rx_errors.
rxo_seen() {
	read -r a < $S/rx_packets
	read -r b < $S/rx_errors
	SEEN=$((a + b))
}

# rxo_now: the guest's uptime in hundredths of a second, into NOW.
rxo_now() {
	read -r up _ < /proc/uptime
	NOW=$(( ${up%.*} * 100 + 1${up#*.} - 100 ))
}

# rxo_wait N BASE: until rx_packets + rx_errors reach BASE + N, then settle.  A frame the
# MAC drops without counting it never arrives, so the wait also ends once the count has
# stood still for 2 s, but not before 3 s (a loaded host can hold frames back that long:
# a fixed 3 s once dumped the counters of a guest still receiving), and after 20 s at most.
rxo_wait() {
	rxo_now; w_start=$NOW; w_moved=$NOW; w_last=-1
	while rxo_seen && [ $SEEN -lt $(($2 + $1)) ]; do
		rxo_now
		if [ $SEEN -ne $w_last ]; then w_last=$SEEN; w_moved=$NOW; fi
		[ $((NOW - w_start)) -ge 2000 ] && break
		[ $((NOW - w_start)) -ge 300 ] && [ $((NOW - w_moved)) -ge 200 ] && break
		sleep 0.01
	done
	sleep 0.05
}

# rxo_dump N LINES: the probe's first N records (one map dump, in key order; of each value
# only its first LINES lines of 16 bytes, what the scenario's longest op list can have
# written), its packet counter, ethtool -S and the netdev counters.
rxo_dump() {
	echo "RXO-RECORDS"
	if [ "$1" -gt 0 ]; then
		bpftool map dump pinned $M/records | awk -v want="$1" -v max="${2:-42}" '
			/^key:/ { e++; skip = 1; next }
			skip { skip = 0; next }
			e > want { exit }
			/^value:/ { n = 0; print; next }
			/^[0-9a-f][0-9a-f] / { if (n < max) print; n++ }'
	fi
	bpftool map lookup pinned $M/seqmap key hex 00 00 00 00
	echo "RXO-END-RECORDS"
	ethtool -S eth0 | sed -n 's/^ *\([a-z0-9_]*\): \([0-9]*\)$/RXO-ETHTOOL \1 \2/p'
	rxo_netdev
}

# rxo_cmd: the control map's command into CSEQ COP CN CXDP CCSUM CVLAN (each field a
# little-endian u32 as bpftool prints it: hex bytes, after the 4 key bytes).
rxo_cmd() {
	set -- $(bpftool map lookup pinned $M/ctrl key hex 00 00 00 00 2>/dev/null |
		sed 's/key://; s/value://')
	[ $# -ge 36 ] || return 1
	shift 4
	CSEQ=$((0x$4$3$2$1)); shift 4
	COP=$((0x$4$3$2$1)); shift 4
	CN=$((0x$4$3$2$1)); shift 4
	CXDP=$((0x$4$3$2$1)); shift 4
	CCSUM=$((0x$4$3$2$1)); shift 4
	CVLAN=$((0x$4$3$2$1)); shift 4
	CLINES=$((0x$4$3$2$1))
}

onoff() {
	case $1 in 0) echo off ;; 1) echo on ;; *) echo - ;; esac
}

# The commands (struct rxo_cmd's op).
# 1 RUN: reset, print the baseline and "RXO-ARMED SEQ" (the host then sends the
#   scenario's frames), wait for them, dump.
# 2 RESET: reset only.  3 DUMP: dump N records.  4 INFO: driver and kernel.
rxo_do() {
	case $COP in
	1)
		rxo_reset "$CXDP" "$(onoff "$CCSUM")" "$(onoff "$CVLAN")" || return
		rxo_netdev
		rxo_seen
		echo "RXO-ARMED $CSEQ"
		rxo_wait "$CN" "$SEEN"
		if [ "$CXDP" = 1 ]; then rxo_dump "$CN" "$CLINES"; else rxo_dump 0; fi
		;;
	2) rxo_reset "$CXDP" "$(onoff "$CCSUM")" "$(onoff "$CVLAN")" && rxo_netdev ;;
	3) rxo_dump "$CN" "$CLINES" ;;
	4)
		echo "RXO-INFO driver $(basename "$(readlink /sys/class/net/eth0/device/driver)")"
		echo "RXO-INFO kernel $(uname -r)"
		echo "RXO-INFO compatible $(tr '\0' ' ' < /sys/class/net/eth0/device/of_node/compatible)"
		;;
	*) return 64 ;;
	esac
}

echo "RXO-READY $(cut -d' ' -f1 /proc/uptime)"
last=0
while :; do
	if rxo_cmd && [ "$CSEQ" != "$last" ] && [ "$CSEQ" != 0 ]; then
		# Read again: the command's copy into the map is long complete by now.
		sleep 0.02
		rxo_cmd
		last=$CSEQ
		echo "RXO-BEGIN $CSEQ"
		rxo_do
		echo "RXO-ACK $CSEQ $?"
	else
		sleep 0.01
	fi
done
