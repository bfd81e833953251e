"""Live kernel back end: namespaces, a veth pair or tap, and the op-list probe program.

- :mod:`.env`: what a live run needs (root, clang, bpftool, BTF, libbpf) and why not;
- :mod:`.libbpf`: the few ``libbpf.so.1`` calls, through ctypes;
- :mod:`.netns`: named network namespaces with a project prefix + pid, teardown on every
  exit path and a start-up sweep of dead runs' leftovers;
- :mod:`.probe`: builds ``rxo_probe.bpf.c`` against a run-time ``vmlinux.h``, loads it
  device-bound, feeds op lists and reads back one record per packet;
- :mod:`.ethtool`: ``ETHTOOL_GSTATS`` through ``SIOCETHTOOL`` (``ethtool -S`` in-process).
"""
