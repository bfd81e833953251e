"""The XDP core: xdp_buff, the adjust helpers, xdp_frame conversion, memory types, actions.

Modules (SPEC area "XDP core"):

- :mod:`~reference.xdp.arch`: architecture constants and v6.17/v6.18 switches (XDP-BUFF-001).
- :mod:`~reference.xdp.memory`: pages of real bytes, ``skb_shared_info`` and frags.
- :mod:`~reference.xdp.buff`: ``struct xdp_buff``, ``xdp_init_buff``, ``xdp_prepare_buff``,
  frags (XDP-BUFF-*).
- :mod:`~reference.xdp.helpers`: ``bpf_xdp_adjust_head``/``_meta``/``_tail`` (XDP-ADJ-*).
- :mod:`~reference.xdp.frame`: ``struct xdp_frame`` and conversion (XDP-FRAME-*).
- :mod:`~reference.xdp.mem` and :mod:`~reference.xdp.rxq`: memory types, return paths,
  RX-queue registration (XDP-MEM-*).
- :mod:`~reference.xdp.actions`: ``enum xdp_action`` and the verdict switch (XDP-ACT-*).
- :mod:`~reference.xdp.warn`: kernel WARNs reported as observables (:class:`KernelWarn`).
"""
