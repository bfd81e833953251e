#!/bin/busybox sh
# rx-oracle qemu-fec guest init (conformance/live/qemu_fec/guest.py drives it).
# Sets up eth0 with the fec driver and the probe, prints "RXO-READY", then runs one
# command per console line ("ID COMMAND"), each followed by "RXO-DONE ID STATUS".
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
if ! bpftool prog load /probe.o /sys/fs/bpf/rxo pinmaps $M; then
	echo "RXO-FAIL probe load"
fi
echo 1 > /proc/sys/net/core/bpf_jit_enable 2>/dev/null
dmesg -n 1
# (no stty: reconfiguring the emulated UART can lose its receive state)

# rxo_reset XDP CSUM: program off, down, rx checksum on/off, program on if XDP=1, up,
# carrier, packet counter back to 0; prints the netdev counters as the baseline.
rxo_reset() {
	bpftool net detach xdpdrv dev eth0 2>/dev/null
	ip link set eth0 down
	[ -n "$2" ] && ethtool -K eth0 rx "$2" >/dev/null 2>&1
	if [ "$1" = 1 ]; then
		bpftool net attach xdpdrv pinned /sys/fs/bpf/rxo dev eth0 || return 1
	fi
	ip link set eth0 up || return 1
	n=0
	while [ "$(cat /sys/class/net/eth0/carrier 2>/dev/null)" != 1 ] && [ $n -lt 400 ]; do
		sleep 0.01; n=$((n + 1))
	done
	[ "$(cat /sys/class/net/eth0/carrier)" = 1 ] || return 2
	bpftool map update pinned $M/seqmap key hex 00 00 00 00 value hex 00 00 00 00
	rxo_netdev
}

rxo_netdev() {
	for f in $S/*; do echo "RXO-NETDEV ${f##*/} $(cat $f)"; done
}

# rxo_prog I BYTES...: op list of packet I (a struct rxo_prog in hex).
rxo_prog() {
	i=$1; shift
	bpftool map update pinned $M/progs key hex $(rxo_key "$i") value hex "$@"
}

rxo_key() {
	printf '%02x %02x 00 00' $(($1 & 255)) $(($1 >> 8 & 255))
}

# rxo_wait N BASE: until rx_packets + rx_errors reach BASE + N (or 3 s), then settle.
rxo_wait() {
	n=0
	while [ $(($(cat $S/rx_packets) + $(cat $S/rx_errors))) -lt $(($2 + $1)) ] && [ $n -lt 300 ]; do
		sleep 0.01; n=$((n + 1))
	done
	sleep 0.05
}

# rxo_dump N: the probe's N records, ethtool -S and the netdev counters.
rxo_dump() {
	i=0
	while [ $i -lt "$1" ]; do
		echo "RXO-REC $i"
		bpftool map lookup pinned $M/records key hex $(rxo_key $i)
		i=$((i + 1))
	done
	echo "RXO-SEQ"
	bpftool map lookup pinned $M/seqmap key hex 00 00 00 00
	ethtool -S eth0 | sed -n 's/^ *\([a-z0-9_]*\): \([0-9]*\)$/RXO-ETHTOOL \1 \2/p'
	rxo_netdev
}

# The console's receive side stops after a few dozen bytes on QEMU 7.2's i.MX UART unless
# the port is opened afresh: each command line is read from a new open of the tty, made
# before the previous command's RXO-DONE (or RXO-READY) is printed so no byte is missed.
# Known limit (QEMU 7.2): the console's receive side dies after about four receive
# interrupts: QEMU's i.MX UART never sets USR2_WAKE, so the driver's RX flood check
# (imx_uart_check_flood) soft-resets the port, and QEMU's soft reset also clears the
# control registers.  A few short commands work; see guest.py.
echo "RXO-READY $(cut -d' ' -f1 /proc/uptime)"
while IFS= read -r line; do
	[ -z "$line" ] && continue
	id=${line%% *}
	eval "${line#* }"
	echo "RXO-DONE $id $?"
done
echo "RXO-EOF"
